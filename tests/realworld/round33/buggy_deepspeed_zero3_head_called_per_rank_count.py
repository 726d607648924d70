"""DeepSpeed ZeRO-3: a task head invoked a data-dependent number of times per rank, each call gathering its parameters.

Models: deepspeedai/DeepSpeed issue #7998 ("Will zero 3 support diffrent module usage?": "When using DeepSpeed ZeRO-3,
it appears that each module is expected to be invoked the same number of times across all ranks. ... suppose I have an
LLM module A and a task-specific head B. Depending on the output of A, module B may be executed a different number of
times on different ranks. For instance, B may be called once on rank 0, but three times on rank 1. In this case, rank 1
hangs on the second invocation and waits indefinitely for rank 0"; the reply names the cause: ZeRO-3 assumes "that
parameter gather/release operations occur in the same order across all ranks"). Code modelled (written here, not
copied): ZeRO-3's parameter partitioning -- each rank keeps a flat shard of every module's parameters, a pre-forward
fetch all-gathers the module's full parameters (``partitioned_param_coordinator.fetch_sub_module`` ->
``__all_gather_params``), and the backward reduces the full gradient and keeps this rank's shard (a reduce-scatter;
an all-reduce here, gloo has none) -- and a model whose backbone A scores candidate spans and whose head B runs once per
span above a threshold.

The bug: rank 0's batch has one span above the threshold and rank 1's three; rank 0 calls B once and goes on to the
backward, rank 1 calls B a second time and its parameter gather meets rank 0's backward reduction. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

THRESHOLD = 0.0
SEEDS = {0: 30, 1: 22}


class GatherParams(torch.autograd.Function):
    @staticmethod
    def forward(ctx, shard, numel):
        world = dist.get_world_size()
        full = torch.empty(shard.numel() * world)
        dist.all_gather_into_tensor(full, shard.contiguous())  # WAITS
        ctx.shard_numel = shard.numel()
        return full[:numel]

    @staticmethod
    def backward(ctx, grad_full):
        world = dist.get_world_size()
        padded = torch.zeros(ctx.shard_numel * world)
        padded[: grad_full.numel()] = grad_full
        dist.all_reduce(padded)  # WAITS
        start = dist.get_rank() * ctx.shard_numel
        return padded[start:start + ctx.shard_numel] / world, None


class Zero3Linear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        full = torch.cat([nn.Linear(in_features, out_features).weight.detach().flatten(), torch.zeros(out_features)])
        world = dist.get_world_size()
        self.shape = (out_features, in_features)
        self.numel = full.numel()
        per_rank = -(-self.numel // world)
        padded = torch.zeros(per_rank * world)
        padded[: self.numel] = full
        self.ds_shard = nn.Parameter(padded[dist.get_rank() * per_rank:(dist.get_rank() + 1) * per_rank].clone())

    def forward(self, x):
        full = GatherParams.apply(self.ds_shard, self.numel)  # WAITS
        out_f, in_f = self.shape
        weight, bias = full[: out_f * in_f].view(out_f, in_f), full[out_f * in_f:]
        return F.linear(x, weight, bias)


class SpanModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Zero3Linear(12, 16)
        self.scorer = Zero3Linear(16, 1)
        self.head = Zero3Linear(16, 4)

    def forward(self, tokens, labels):
        hidden = torch.tanh(self.backbone(tokens))
        scores = self.scorer(hidden).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(scores, (labels >= 0).float())
        selected = (scores > THRESHOLD).nonzero().flatten().tolist()
        for i in selected:  # BUG
            logits = self.head(hidden[i:i + 1])  # WAITS
            loss = loss + F.cross_entropy(logits, labels[i:i + 1].clamp(min=0))
        return loss, len(selected)


def make_batch(rank):
    gen = torch.Generator().manual_seed(SEEDS[rank])
    tokens = torch.randn(6, 12, generator=gen)
    labels = torch.randint(-1, 4, (6,), generator=gen)
    return tokens, labels


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = SpanModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    tokens, labels = make_batch(rank)
    for step in range(3):
        loss, calls = model(tokens, labels)  # WAITS
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
        print(f"[rank {rank}] step {step}: head called {calls}x, loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
