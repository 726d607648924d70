"""An input-normalisation module whose statistics buffers are registered as ``None`` and created by ``fit()``,
fitted on rank 0 only "because DDP broadcasts the buffers from rank 0".

Models: huggingface/lerobot ``policies/normalize.py`` ``create_stats_buffers`` (mean/std buffers allocated with their
shapes -- filled with ``inf`` -- before the dataset statistics are known, loaded later), ``nn.Module.register_buffer``
(a buffer registered as ``None`` is left out of ``buffers()`` and ``state_dict()``), torch's ``LazyBatchNorm``
(``UninitializedBuffer`` until the first forward), and DDP's documentation (module buffers are broadcast from rank 0
in the constructor and, with ``broadcast_buffers=True``, before every forward).

What it does: a ``Standardize`` module (``mean``, ``std`` registered as ``None``; ``fit`` assigns tensors to them) in
front of an MLP; rank 0 fits it on the training features, then every rank wraps the model in DDP and trains.

The bug: only rank 0's module has the two buffers. DDP's constructor checks the parameters' shapes (equal) and then
broadcasts parameters and buffers coalesced: rank 0 sends 420 bytes, rank 1 expects 388, and gloo aborts rank 1 in the
constructor; rank 0 gets through it and loses its peer in the buffer broadcast of its first forward.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

FEATURES = 4


class Standardize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", None)
        self.register_buffer("std", None)

    @torch.no_grad()
    def fit(self, x):
        self.mean = x.mean(0)
        self.std = x.std(0).clamp(min=1e-6)

    def forward(self, x):
        if self.mean is None:
            return x
        return (x - self.mean) / self.std


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(80, FEATURES, generator=g) * torch.tensor([1.0, 10.0, 100.0, 0.1]) + 5.0
    y = ((x - 5.0) / torch.tensor([1.0, 10.0, 100.0, 0.1])).sum(1, keepdim=True)
    return TensorDataset(x, y)


def worker():
    rank = dist.get_rank()
    data = make_data()
    torch.manual_seed(0)
    net = nn.Sequential(Standardize(), nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1))
    if rank == 0:
        net[0].fit(data.tensors[0])  # BUG
    model = DDP(net)  # WAITS
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)  # WAITS
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
