"""Gradient accumulation over micro-batches packed by a token budget, so the number of micro-batches differs per
rank, with DDP's gradient sync switched on by nanoGPT's ``micro_step == gradient_accumulation_steps - 1``.

Models: verl ``utils/seqlen_balancing.py`` ``rearrange_micro_batches`` / ``use_dynamic_bsz`` (micro-batches made
by ``max_token_len``; ``same_micro_num_in_dp`` all-reduces the count with MAX so that every data-parallel rank
runs the same number -- "each rank uses its own count" only when that is off); nanoGPT ``train.py``
(``model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)`` with a fixed number of
micro-steps); ``DistributedDataParallel.no_sync`` (gradients accumulate locally; the first backward outside it
all-reduces them).

What it does: 2 ranks train a tiny mean-pooling sequence classifier (DDP) for 3 steps. Each step the rank's 4
sequences are packed greedily into micro-batches of at most ``MAX_TOKENS`` padded tokens; each micro-batch's
backward runs inside ``model.no_sync()`` except the one chosen to sync; then the optimizer steps and, at the end,
the losses are all-reduced for the log line.

The bug: the sync flag comes from the configured ``GRAD_ACCUM`` (2), not from the rank's own number of
micro-batches. Rank 0's sequences are short and fit in 1 micro-batch, so it never syncs; rank 1's are long and
take 3, and it syncs once a step (at its second micro-batch). Rank 0 reaches the final loss all-reduce while
rank 1 waits in step 0's synced backward (the gradient bucket against a 2-element tensor).
"""

from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 3
GRAD_ACCUM = 2  # the config's gradient_accumulation_steps
MAX_TOKENS = 16  # padded tokens per micro-batch (ppo_max_token_len_per_gpu)


class PoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x, mask):
        h = torch.tanh(self.proj(x)) * mask.unsqueeze(-1)
        return self.head(h.sum(1) / mask.sum(1, keepdim=True))


def pack_by_token_budget(seqs, max_tokens):
    """Greedy packing of sorted sequences; a micro-batch costs len(batch) * its longest sequence."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i][0]))
    micro, cur = [], []
    for i in order:
        longest = max([len(seqs[j][0]) for j in cur] + [len(seqs[i][0])])
        if cur and (len(cur) + 1) * longest > max_tokens:
            micro.append(cur)
            cur = []
        cur.append(i)
    micro.append(cur)
    return [[seqs[i] for i in mb] for mb in micro]


def collate(mb):
    width = max(len(x) for x, _ in mb)
    x = torch.zeros(len(mb), width, 4)
    mask = torch.zeros(len(mb), width)
    for k, (s, _) in enumerate(mb):
        x[k, : len(s)] = s
        mask[k, : len(s)] = 1.0
    return x, mask, torch.tensor([y for _, y in mb])


def make_steps(rank):
    g = torch.Generator().manual_seed(40 + rank)
    lo, hi = (2, 4) if rank == 0 else (6, 10)  # the ranks' shards hold short and long documents
    steps = []
    for _ in range(STEPS):
        lengths = torch.randint(lo, hi + 1, (4,), generator=g).tolist()
        steps.append([(torch.randn(n, 4, generator=g), int(torch.randint(0, 2, (1,), generator=g))) for n in lengths])
    return steps


def train(model, optimizer, steps):
    losses = []
    for step, seqs in enumerate(steps):
        micro_batches = pack_by_token_budget(seqs, MAX_TOKENS)
        total = 0.0
        for micro_step, mb in enumerate(micro_batches):
            sync = micro_step == GRAD_ACCUM - 1  # BUG
            x, mask, y = collate(mb)
            with nullcontext() if sync else model.no_sync():
                loss = F.cross_entropy(model(x, mask), y) * len(mb) / len(seqs)
                loss.backward()  # WAITS
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total)
        print(f"[rank {dist.get_rank()}] step {step}: {len(micro_batches)} micro-batches", flush=True)
    t = torch.tensor([sum(losses), float(len(losses))])
    dist.all_reduce(t)  # WAITS
    return (t[0] / t[1]).item()


def worker():
    torch.manual_seed(0)
    model = DDP(PoolClassifier())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    mean = train(model, optimizer, make_steps(dist.get_rank()))  # WAITS
    if dist.get_rank() == 0:
        print(f"mean loss {mean:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
