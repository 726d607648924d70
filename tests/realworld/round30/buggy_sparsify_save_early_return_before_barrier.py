"""EleutherAI's SAE trainer: ``save()`` returns at once on every rank but 0, and rank 0 ends it with a barrier.

Models: EleutherAI/sparsify PR #5 ("Fix hang after calling ``SaeTrainer.save()`` w/ DDP"): the trainer hung at
the first save ("stays stuck on iteration 999"); with ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` it reported "rank 0 is
in a barrier while the others have moved on to reduce". The cause named in the PR: "The first ``if`` causes the
other processes to leave the function immediately, so only rank 0 hits the barrier"; the fix removes the early
return so every process reaches ``dist.barrier()``.
Code modelled (written here, not copied): ``sae/trainer.py`` ``SaeTrainer.fit`` (an SAE per hooked layer under
DDP, the FVU metric all-reduced every step for the log, ``save()`` every ``save_every`` steps) and ``save()``
(``if rank != 0: return``, the per-layer ``save_to_disk``, then the barrier).

2 ranks, one SAE, 6 steps, ``save_every = 3``: at step 3 rank 0 waits in ``save()``'s barrier, rank 1 has moved
on to step 4 and waits in the DDP gradient all-reduce of its backward.
Bug: the early return (BUG). Waiting: rank 0 in the barrier (WAITS), rank 1 in ``backward`` (WAITS).
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

D_IN = 16
NUM_LATENTS = 64
K = 8
STEPS = 6
SAVE_EVERY = 3


class SparseCoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(D_IN, NUM_LATENTS)
        self.W_dec = nn.Parameter(self.encoder.weight.detach().clone())
        self.b_dec = nn.Parameter(torch.zeros(D_IN))

    def forward(self, x):
        pre = torch.relu(self.encoder(x - self.b_dec))
        top = pre.topk(K, dim=-1)
        acts = torch.zeros_like(pre).scatter(-1, top.indices, top.values)
        recon = acts @ self.W_dec + self.b_dec
        fvu = (recon - x).pow(2).sum() / (x - x.mean(0)).pow(2).sum()
        return fvu


def run_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r30_sparsify_{tag}")


class SaeTrainer:
    def __init__(self, rank):
        self.rank = rank
        torch.manual_seed(0)
        self.saes = {"layers.3": DDP(SparseCoder())}
        self.optimizer = torch.optim.Adam([p for s in self.saes.values() for p in s.parameters()], lr=1e-3)
        self.global_step = 0

    def save(self):
        if self.rank != 0:  # BUG
            return
        for hookpoint, sae in self.saes.items():
            path = os.path.join(run_dir(), hookpoint)
            os.makedirs(path, exist_ok=True)
            torch.save(sae.module.state_dict(), os.path.join(path, "sae.pt"))
        print(f"saved SAEs at step {self.global_step}", flush=True)
        if dist.is_initialized():
            dist.barrier()  # WAITS

    def fit(self, hidden_batches):
        for hiddens in hidden_batches:
            fvus = {}
            for hookpoint, sae in self.saes.items():
                fvu = sae(hiddens)
                fvu.backward()  # WAITS
                fvus[hookpoint] = fvu.detach()
            self.optimizer.step()
            self.optimizer.zero_grad()
            for hookpoint, fvu in fvus.items():
                dist.all_reduce(fvu)
                fvus[hookpoint] = fvu / dist.get_world_size()
            self.global_step += 1
            if self.rank == 0:
                print(f"step {self.global_step}: fvu {fvus['layers.3'].item():.4f}", flush=True)
            if self.global_step % SAVE_EVERY == 0:
                self.save()  # WAITS


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(run_dir(), ignore_errors=True)
    dist.barrier()
    g = torch.Generator().manual_seed(10 + rank)
    hidden_batches = [torch.randn(32, D_IN, generator=g) for _ in range(STEPS)]
    SaeTrainer(rank).fit(hidden_batches)  # WAITS
    dist.barrier()
    if rank == 0:
        shutil.rmtree(run_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
