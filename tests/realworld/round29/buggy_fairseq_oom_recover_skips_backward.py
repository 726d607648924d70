"""fairseq's out-of-memory recovery in ``Trainer.train_step``, on one rank of a DDP job: the batch is skipped.

Models facebookresearch/fairseq PR #3989 ("Fixes OOM bug causing distributed training jobs to hang": "When one of
the workers gets a OOM error, it tries to recover with a ``try ... except`` statement, but the other workers keep
waiting for it, and they get out of sync"), issue #708 ("fairseq stuck during training", "WARNING: ran out of memory
... Skipping batch") and PR #689 (the ``raise_oom`` option: "not raising OOM during trainer.train_step causes
various issue, including NCCL hangs / gloo sync errors because gradient is not synced properly"). The code modelled
is ``fairseq/trainer.py`` ``train_step``: the forward/backward of each sample inside ``try``; on a RuntimeError whose
text says "out of memory" it logs "attempting to recover from OOM in forward/backward pass", counts ``ooms``,
zeroes the gradients and carries on to the all-reduce of the logging outputs (``_aggregate_logging_outputs``),
after which the update is skipped if any rank ran out of memory.

Written for this corpus (nothing copied). A small language-model-ish net (embedding, mean over positions, linear)
is wrapped in DDP; each rank draws its own token batches, and rank 1's third batch is 40 tokens long. The GPU is a
stand-in: ``forward_with_memory_check`` raises the CUDA out-of-memory ``RuntimeError`` when a batch has more than
``TOKEN_BUDGET`` tokens, before any autograd graph exists.

The bug: the recovery skips the batch on the rank that ran out of memory -- no ``loss.backward()``, so no DDP
gradient all-reduce on that rank. At step 2 rank 0 is in its backward's gradient all-reduce while rank 1 is in the
all-reduce of the logging outputs (3 numbers): the two ranks are one collective apart from there.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 32
BATCH = 4
TOKEN_BUDGET = 128  # stand-in for the GPU's memory: tokens per batch
LENGTHS = {0: [6, 8, 7, 5], 1: [6, 8, 40, 5]}  # rank 1's step-2 batch is 4 x 40 = 160 tokens


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.out = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(dim=1))


def make_batches(rank):
    g = torch.Generator().manual_seed(100 + rank)
    batches = []
    for length in LENGTHS[rank]:
        tokens = torch.randint(0, VOCAB, (BATCH, length), generator=g)
        target = tokens[:, -1].clone()
        batches.append((tokens, target))
    return batches


def forward_with_memory_check(model, sample):
    tokens, target = sample
    if tokens.numel() > TOKEN_BUDGET:  # stand-in for the allocator running out of device memory
        raise RuntimeError(
            f"CUDA out of memory. Tried to allocate {tokens.numel() * 4} MiB (GPU 0; 10.92 GiB total capacity)"
        )
    logits = model(tokens)
    return nn.functional.cross_entropy(logits, target), tokens.numel()


def train_step(model, optimizer, sample, rank, step):
    optimizer.zero_grad(set_to_none=True)
    ooms = 0
    loss_value, ntokens = 0.0, 0
    try:
        loss, ntokens = forward_with_memory_check(model, sample)
        loss.backward()  # WAITS
        loss_value = loss.item()
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        print(f"[rank {rank}] step {step}: | WARNING: ran out of memory with exception: {e}", flush=True)
        print(f"[rank {rank}] step {step}: attempting to recover from OOM in forward/backward pass", flush=True)
        ooms += 1
        optimizer.zero_grad(set_to_none=True)  # BUG
    # _aggregate_logging_outputs: sum of loss, tokens and OOM count over the workers
    stats = torch.tensor([loss_value, float(ntokens), float(ooms)])
    dist.all_reduce(stats)  # WAITS
    if stats[2].item() > 0:
        print(f"[rank {rank}] step {step}: skipping update, {int(stats[2].item())} worker(s) ran out of memory", flush=True)
        return None
    optimizer.step()
    return stats[0].item() / dist.get_world_size()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyLM())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, sample in enumerate(make_batches(rank)):
        loss = train_step(model, optimizer, sample, rank, step)  # WAITS
        if rank == 0 and loss is not None:
            print(f"step {step}: loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
