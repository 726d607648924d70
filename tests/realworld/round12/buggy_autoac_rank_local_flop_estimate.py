"""An activation-checkpointing plan chosen from data-dependent flop estimates on each rank, under context parallelism.

Source: modelled on pytorch/pytorch issue #146707 ("AutoAC can cause deadlocks with tensor parallelism and
data-dependent flop formulas": the memory-budget partitioner chooses what to save and what to recompute from
``FlopCounterMode`` estimates; for varlen / document-causal attention the estimate depends on the sequence layout,
the decisions are frozen at the first invocation, and "if ranks have different data this could lead to inconsistent
decisions" that add or remove collectives from the backward) and its fix, pytorch PR #185820 ("Use worst-case
data-dependent flops for AutoAC": ranks "with the same packed tensor shape but different rank-local sequence layouts
can get different flop estimates"); ByteDance-Seed/VeOmni issue #979 (a collective inside a recomputed region, ranks
out of step); context-parallel attention that all-gathers K and V over the sequence (Llama 3's all-gather CP).

Two ranks each hold half of one packed sequence of documents (rank 0: documents of 3, 3 and 2 tokens; rank 1: one
document of 8). The planner may save one block's activations and recomputes the other, keeping the more expensive
one. The bug: the attention estimate counts the key positions this rank's queries actually attend to, which depends
on the rank's documents: rank 0 finds attention cheaper than the MLP and recomputes attention, rank 1 recomputes the
MLP. In backward, rank 0 re-runs attention's forward, i.e. two more all-gathers, while rank 1 goes straight into
attention's backward all-reduces.
"""

import math
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 8
FFN = 4
DOCUMENTS = (3, 3, 2, 8)  # lengths of the packed documents; each rank holds 8 consecutive tokens


class _AllGatherSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local):
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local.contiguous())  # WAITS
        ctx.rows = local.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)  # WAITS
        rank = dist.get_rank()
        return grad[rank * ctx.rows:(rank + 1) * ctx.rows]


class ContextParallelAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        k_all = _AllGatherSequence.apply(k)  # WAITS
        v_all = _AllGatherSequence.apply(v)
        scores = (q @ k_all.T / math.sqrt(HIDDEN)).masked_fill(~mask, float("-inf"))
        return x + self.proj(torch.softmax(scores, dim=-1) @ v_all)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, FFN)
        self.fc2 = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


def document_causal_mask(rank, local_tokens):
    doc = torch.repeat_interleave(torch.arange(len(DOCUMENTS)), torch.tensor(DOCUMENTS))
    position = torch.arange(len(doc))
    rows = slice(rank * local_tokens, (rank + 1) * local_tokens)
    return (doc[rows, None] == doc[None, :]) & (position[rows, None] >= position[None, :])


def attention_flops(mask):
    return int(mask.sum()) * 4 * HIDDEN  # QK^T and AV over the key positions actually attended


def mlp_flops(tokens):
    return tokens * 4 * HIDDEN * FFN


class Block(nn.Module):
    """Attention then MLP; the first call freezes a save-or-recompute plan, as AutoAC's partitioner does."""

    def __init__(self):
        super().__init__()
        self.attention = ContextParallelAttention()
        self.mlp = MLP()
        self.recompute = None

    def plan(self, x, mask):
        attention_cost = attention_flops(mask)  # BUG
        mlp_cost = mlp_flops(x.shape[0])
        # the memory budget keeps one block's activations: save the one that is dearer to recompute
        self.recompute = "attention" if attention_cost < mlp_cost else "mlp"
        print(f"rank {dist.get_rank()}: attention {attention_cost} vs mlp {mlp_cost} flops: recompute {self.recompute}",
              flush=True)

    def forward(self, x, mask):
        if self.recompute is None:
            self.plan(x, mask)
        if self.recompute == "attention":
            x = checkpoint(self.attention, x, mask, use_reentrant=False)
        else:
            x = self.attention(x, mask)
        if self.recompute == "mlp":
            return checkpoint(self.mlp, x, use_reentrant=False)
        return self.mlp(x)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    local_tokens = sum(DOCUMENTS) // world
    torch.manual_seed(0)  # replicated weights, the same packed sequence everywhere
    block, head = Block(), nn.Linear(HIDDEN, 1)
    params = [*block.parameters(), *head.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.05)
    tokens = torch.randn(sum(DOCUMENTS), HIDDEN)
    targets = tokens.sum(dim=1, keepdim=True)
    mask = document_causal_mask(rank, local_tokens)
    local = slice(rank * local_tokens, (rank + 1) * local_tokens)
    for step in range(3):
        loss = nn.functional.mse_loss(head(block(tokens[local], mask)), targets[local])
        loss.backward()  # WAITS
        for p in params:  # replicated weights: sum the gradients of the two halves of the sequence
            dist.all_reduce(p.grad)
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
