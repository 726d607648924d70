"""MLPF (jpata/particleflow) PyTorch training: validation run on rank 0 alone, through ``model.module``.

Models: jpata/particleflow PR #233 ("fix pytorch multi-GPU training hang": "Fixing ddp.dist.barrier() hang by running
validation forward pass using model.module() instead of model(). This is needed because validation is only run on
single gpu (unlike training & inference)"). Code modelled (written here, not copied): ``mlpf/pyg/training.py`` of
late 2023 -- ``train_and_valid(rank, world_size, model, optimizer, data_loader, is_train)`` looping over batches, the
validation pass skipped on ranks other than 0, the per-epoch ``dist.barrier()`` after it, the training loop calling
it twice per epoch -- with an MLPF-like model (an input encoder with normalisation layers whose running statistics are
module buffers, and classification and regression heads), wrapped in ``DistributedDataParallel``.

The fix modelled is the PR's: the validation forward calls ``model.module(x)``, the wrapped module, so rank 0's
validation issues no collective and rank 1 waits for it in the barrier only. 2 ranks, 2 epochs.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_CLASSES = 6


class MLPF(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ELU(), nn.Linear(32, 32), nn.ELU())
        self.nn_id = nn.Linear(32, NUM_CLASSES)
        self.nn_p4 = nn.Linear(32 + NUM_CLASSES, 4)

    def forward(self, x):
        h = self.encoder(x)
        ids = self.nn_id(h)
        return ids, self.nn_p4(torch.cat([h, ids], dim=-1))


def make_loader(rank, n_batches, seed):
    gen = torch.Generator().manual_seed(seed + rank)
    for _ in range(n_batches):
        x = torch.randn(16, 12, generator=gen)
        yield x, x[:, :NUM_CLASSES].argmax(dim=1), x[:, 6:10]


def train_and_valid(rank, world_size, model, optimizer, data_loader, is_train):
    if is_train:
        model.train()
    else:
        model.eval()
    loss_accum = 0.0
    n = 0
    for x, target_ids, target_p4 in data_loader:
        if is_train:
            pred_ids, pred_p4 = model(x)
        else:
            with torch.no_grad():
                pred_ids, pred_p4 = model.module(x)
        loss = F.cross_entropy(pred_ids, target_ids) + F.mse_loss(pred_p4, target_p4)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        loss_accum += loss.item()
        n += 1
    return loss_accum / max(n, 1)


def train_mlpf(rank, world_size, model, optimizer, num_epochs):
    for epoch in range(num_epochs):
        train_loss = train_and_valid(rank, world_size, model, optimizer, make_loader(rank, 4, 10 * epoch), True)
        if (world_size > 1) and (rank != 0):
            valid_loss = None
        else:
            valid_loss = train_and_valid(rank, world_size, model, optimizer, make_loader(rank, 3, 999), False)
        if world_size > 1:
            dist.barrier()
        valid = "-" if valid_loss is None else f"{valid_loss:.4f}"
        print(f"[rank {rank}] epoch {epoch}: train_loss {train_loss:.4f} valid_loss {valid}", flush=True)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(MLPF())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_mlpf(rank, world_size, model, optimizer, num_epochs=2)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
