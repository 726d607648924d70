"""fairseq's out-of-memory recovery in ``Trainer.train_step`` on one rank of a DDP job, with a dummy-batch backward.

Models facebookresearch/fairseq PR #3989, issue #708 and PR #689 (see the buggy twin) and the fix this twin applies:
fairseq's own dummy batch -- ``Trainer._dummy_batch``, the first batch seen, run with ``ignore_grad=True`` so that the
loss is multiplied by 0 (``is_dummy_batch`` in ``train_step``) -- which every rank that has no usable batch still
runs forward and backward, so DDP's gradient all-reduce happens on every rank in every step.

Written for this corpus (nothing copied). As in the buggy twin, rank 1's step-2 batch (4 x 40 tokens) exceeds the
stand-in ``TOKEN_BUDGET`` and ``forward_with_memory_check`` raises the CUDA out-of-memory ``RuntimeError``. The
recovery zeroes the gradients, then runs the dummy batch with its loss multiplied by 0 and calls ``backward()``: DDP
all-reduces (rank 0's gradients plus zeros), both ranks all-reduce the logging outputs, see one OOM and skip the
update together.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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


def train_step(model, optimizer, sample, rank, step, dummy_batch):
    optimizer.zero_grad(set_to_none=True)
    ooms = 0
    loss_value, ntokens = 0.0, 0
    try:
        loss, ntokens = forward_with_memory_check(model, sample)
        loss.backward()
        loss_value = loss.item()
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        print(f"[rank {rank}] step {step}: | WARNING: ran out of memory with exception: {e}", flush=True)
        print(f"[rank {rank}] step {step}: attempting to recover from OOM in forward/backward pass", flush=True)
        ooms += 1
        optimizer.zero_grad(set_to_none=True)
        # every rank still takes part in DDP's gradient all-reduce: the dummy batch, its loss times 0
        dummy_loss, _ = forward_with_memory_check(model, dummy_batch)
        (dummy_loss * 0.0).backward()
    # _aggregate_logging_outputs: sum of loss, tokens and OOM count over the workers
    stats = torch.tensor([loss_value, float(ntokens), float(ooms)])
    dist.all_reduce(stats)
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
    batches = make_batches(rank)
    dummy_batch = batches[0]  # fairseq: the first batch becomes self._dummy_batch
    for step, sample in enumerate(batches):
        loss = train_step(model, optimizer, sample, rank, step, dummy_batch)
        if rank == 0 and loss is not None:
            print(f"step {step}: loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
