"""An input-normalisation module whose statistics buffers are allocated with their shapes in ``__init__`` and
filled by ``fit()`` on rank 0 only; DDP's buffer broadcast gives every rank rank 0's statistics.

Models: huggingface/lerobot ``policies/normalize.py`` ``create_stats_buffers`` (mean/std buffers allocated with their
shapes before the dataset statistics are loaded), DDP's documentation (module buffers are broadcast from rank 0 in the
constructor and, with ``broadcast_buffers=True``, before every forward).

What it does: a ``Standardize`` module (``mean`` zeros, ``std`` ones, registered in ``__init__``) in front of an MLP;
rank 0 fits it on the training features (``copy_`` into the buffers), every rank wraps the model in DDP and trains for
two epochs; at the end every rank all-gathers its ``mean`` and checks that they agree. Correct: rank-0-only state that
lives in buffers present on every rank, so DDP's own broadcast carries it.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

FEATURES = 4


class Standardize(nn.Module):
    def __init__(self):
        super().__init__()
        # allocated with their shapes up front (lerobot's create_stats_buffers), filled by fit()
        self.register_buffer("mean", torch.zeros(FEATURES))
        self.register_buffer("std", torch.ones(FEATURES))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(0))
        self.std.copy_(x.std(0).clamp(min=1e-6))

    def forward(self, x):
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
        net[0].fit(data.tensors[0])
    model = DDP(net)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    # the statistics rank 0 computed reached every rank through DDP's buffer broadcast
    stats = [None] * dist.get_world_size()
    dist.all_gather_object(stats, net[0].mean.tolist())
    assert all(s == stats[0] for s in stats), stats
    dist.barrier()


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
