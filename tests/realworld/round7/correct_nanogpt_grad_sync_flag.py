"""nanoGPT-style gradient accumulation under DDP: ``require_backward_grad_sync`` on the last micro-step only,
logging on the master process.

Models karpathy/nanoGPT ``train.py``: ``model.require_backward_grad_sync = (micro_step ==
gradient_accumulation_steps - 1)`` set before the forward of each micro-step ("the official way to do this is
with model.no_sync() context manager, but I really dislike that this bloats the code"), the next batch fetched
asynchronously, gradient clipping, and ``if iter_num % log_interval == 0 and master_process:`` printing
``loss.item() * gradient_accumulation_steps``. karpathy/build-nanogpt PR #30 is the subtle part: the flag must be
set before the forward too, not only before the backward, or DDP does not synchronise as intended.

Looks suspicious, is right: the gradient all-reduce happens on some micro-steps only, but the condition depends
on the micro-step counter, which is the same on every rank; the master-only block calls ``.item()`` on a local
tensor and makes no collective. The replicas are compared at the end.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

GRADIENT_ACCUMULATION_STEPS = 4
MAX_ITERS = 3
LOG_INTERVAL = 1
BLOCK_SIZE, VOCAB = 8, 16


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, idx, targets):
        logits = self.head(torch.tanh(self.wte(idx)))
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))
        return logits, loss


def get_batch(generator, batch_size=4):
    data = torch.randint(0, VOCAB, (batch_size, BLOCK_SIZE + 1), generator=generator)
    return data[:, :-1], data[:, 1:]


def worker():
    rank = dist.get_rank()
    master_process = rank == 0
    torch.manual_seed(1337)
    model = DDP(TinyLM())
    raw_model = model.module
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1337 + rank)  # seed_offset = ddp_rank
    X, Y = get_batch(generator)
    for iter_num in range(MAX_ITERS):
        for micro_step in range(GRADIENT_ACCUMULATION_STEPS):
            model.require_backward_grad_sync = (micro_step == GRADIENT_ACCUMULATION_STEPS - 1)
            logits, loss = model(X, Y)
            loss = loss / GRADIENT_ACCUMULATION_STEPS
            X, Y = get_batch(generator)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % LOG_INTERVAL == 0 and master_process:
            lossf = loss.item() * GRADIENT_ACCUMULATION_STEPS
            print(f"iter {iter_num}: loss {lossf:.4f}")
    flat = torch.cat([p.detach().flatten() for p in raw_model.parameters()])
    copies = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, flat)
    assert all(torch.allclose(copies[0], c) for c in copies), "replicas diverged"


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
