"""nanoGPT-style script: the rank is read from the environment at import time, and the master process
alone runs the evaluation — through the DDP-wrapped model, under ``no_grad``, with a model that has no
buffers, so DDP's forward issues no collective and nothing waits.

Source: karpathy/nanoGPT train.py: module level ``ddp = int(os.environ.get('RANK', -1)) != -1``,
``ddp_rank = int(os.environ['RANK'])``, ``master_process = ddp_rank == 0``; ``model = DDP(model, ...)``;
in the loop ``if iter_num % eval_interval == 0 and master_process: losses = estimate_loss()`` where
``estimate_loss`` is ``@torch.no_grad()`` and calls ``model(X, Y)`` on the DDP-wrapped model.
DDP syncs buffers in forward only when the module has buffers (torch/nn/parallel/distributed.py
``_check_sync_bufs_pre_fwd``); the gradient all_reduce is registered only when grad is enabled.
Expected: every rank finishes all iterations.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    ddp_rank = int(os.environ["RANK"])
    master_process = ddp_rank == 0
else:
    master_process = True
eval_interval = 2
max_iters = 5


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 8)
        self.head = torch.nn.Linear(8, 16)

    def forward(self, idx, targets):
        logits = self.head(self.emb(idx))
        return logits, torch.nn.functional.cross_entropy(logits.view(-1, 16), targets.view(-1))


def get_batch():
    x = torch.randint(0, 16, (4, 6))
    return x, (x + 1) % 16


def worker():
    model = DDP(TinyLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = torch.stack([model(*get_batch())[1] for _ in range(3)])
        model.train()
        return losses.mean().item()

    best_val_loss = None
    for iter_num in range(max_iters):
        if iter_num % eval_interval == 0 and master_process:
            best_val_loss = estimate_loss()
            print(f"step {iter_num}: val loss {best_val_loss:.4f}")
        _, loss = model(*get_batch())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return max_iters


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
