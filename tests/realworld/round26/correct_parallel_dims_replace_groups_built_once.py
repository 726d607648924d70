"""A parallel-layout dataclass whose ``__post_init__`` only validates, the process groups built by an explicit
method; an evaluation fallback halves the micro-batch with ``dataclasses.replace`` on the rank that ran out of
budget.

Models: pytorch/torchtitan ``ParallelDims`` (a ``@dataclass`` whose ``__post_init__`` only validates
``dp * tp == world_size``; the mesh is made by an explicit ``build_mesh()`` on every rank); the Python
``dataclasses.replace`` contract (``__post_init__`` runs again on the copy); huggingface/accelerate
``find_executable_batch_size`` (catch the out-of-memory error, halve the batch size, retry) and MosaicML Composer's
automatic micro-batching; ``torch.distributed.new_group``.

What it does: 2 ranks. ``ParallelDims(dp=2, tp=1)`` is built on every rank at start-up and ``build_groups()`` makes
the DP group once. After a DDP training step, ``evaluate`` runs each batch in micro-batches of
``dims.eval_micro_batch`` rows; a micro-batch whose activations exceed the budget raises
``ActivationBudgetExceeded`` and the loop retries with ``dataclasses.replace(dims, eval_micro_batch=half)``. The
accuracy sums are all-reduced on the DP group.

Why it is right although only rank 1 (the long 64-token samples) catches the exception and rebuilds its config, and
the config class is the one that owns the layout: the copy's ``__post_init__`` validates and returns, and the
micro-batch size only changes how rank 1 splits its own forward passes. Both ranks reach the all-reduce once, on the
group made at start-up.
"""

import dataclasses
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

TOKEN_BUDGET = 256  # rows x tokens of one evaluation micro-batch


class ActivationBudgetExceeded(RuntimeError):
    pass


@dataclasses.dataclass
class ParallelDims:
    dp: int
    tp: int
    world_size: int
    eval_micro_batch: int = 8

    def __post_init__(self):
        if self.dp * self.tp != self.world_size:
            raise ValueError(f"dp({self.dp}) * tp({self.tp}) != world_size({self.world_size})")

    def build_groups(self):  # called once, on every rank, like torchtitan's build_mesh()
        return {"dp": dist.new_group(list(range(self.world_size)), timeout=timedelta(seconds=TIMEOUT))}


def forward_in_micro_batches(model, tokens, micro_batch):
    outs = []
    for chunk in tokens.split(micro_batch):
        if chunk.numel() > TOKEN_BUDGET:
            raise ActivationBudgetExceeded(f"{chunk.shape[0]} x {chunk.shape[1]} tokens")
        outs.append(model(chunk))
    return torch.cat(outs)


def evaluate(model, batches, dims, dp_group):
    correct = torch.zeros(2)
    with torch.no_grad():
        for tokens, labels in batches:
            while True:
                try:
                    logits = forward_in_micro_batches(model, tokens, dims.eval_micro_batch)
                    break
                except ActivationBudgetExceeded as exc:
                    print(f"[rank {dist.get_rank()}] {exc}: micro-batch {dims.eval_micro_batch // 2}", flush=True)
                    dims = dataclasses.replace(dims, eval_micro_batch=dims.eval_micro_batch // 2)
            correct += torch.tensor([(logits.argmax(-1) == labels).sum().item(), len(labels)])
    dist.all_reduce(correct, group=dp_group)
    return correct[0].item() / correct[1].item()


class BagOfTokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(50, 16)
        self.out = nn.Linear(16, 3)

    def forward(self, tokens):
        return self.out(self.embed(tokens))


def eval_batches(rank):
    g = torch.Generator().manual_seed(30 + rank)
    seq = 64 if rank == 1 else 16  # rank 1's shard holds the long documents
    tokens = torch.randint(0, 50, (8, seq), generator=g)
    return [(tokens, tokens[:, 0] % 3)]


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    dims = ParallelDims(dp=world_size, tp=1, world_size=world_size)
    groups = dims.build_groups()
    model = DDP(BagOfTokens(), process_group=groups["dp"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(40 + rank)
    tokens = torch.randint(0, 50, (8, 16), generator=g)
    loss = F.cross_entropy(model(tokens), tokens[:, 0] % 3)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = evaluate(model.module, eval_batches(rank), dims, groups["dp"])
    if rank == 0:
        print(f"eval accuracy {acc:.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
