"""A learner's script seeds each process differently -- accelerate's ``set_seed(seed, device_specific=True)``
(``seed += process_index``), so that the input-noise augmentation differs per rank -- and then makes its
train/validation split with the global ``random`` module, one ``random.random() < val_fraction`` per row. The
split, and with it the training set's LENGTH, differs per rank; ``DistributedSampler`` divides each rank's own
length, so the ranks run different numbers of batches.

Models: huggingface/accelerate ``utils/random.py`` ``set_seed(seed, device_specific=False)`` ("Whether to differ the
seed on each device slightly with ``self.process_index``"), mlfoundations/open_clip ``random_seed(args.seed,
args.rank)`` (rank-offset seeding for augmentation), the per-row ``random.random() < val_frac`` splits of learners'
scripts, and ``torch.utils.data.DistributedSampler`` (``num_samples = ceil(len(dataset) / num_replicas)``).

Bug: with seeds 42 and 43 rank 0 keeps 97 training rows (49 per replica: 7 batches of 8) and rank 1 keeps 92 (46:
6 batches). After its 6th step rank 1 reaches the epoch's loss ``all_reduce`` while rank 0 runs its 7th DDP step:
the collectives do not match (gloo fails on the mismatch, or the rank left over waits until the timeout).
"""
import datetime
import random

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

SEED = 42
N_ROWS = 120


def set_seed(seed, device_specific=False):
    if device_specific:
        seed += dist.get_rank()
    random.seed(seed)
    torch.manual_seed(seed)


def load_rows():
    g = torch.Generator().manual_seed(0)  # the raw file: the same rows on every rank
    x = torch.randn(N_ROWS, 4, generator=g)
    y = (x[:, 0] * x[:, 1] > 0).long()
    return list(zip(x, y))


def split_train_val(rows, val_fraction):
    train, val = [], []
    for row in rows:
        (val if random.random() < val_fraction else train).append(row)  # BUG
    return train, val


class NoisyRows(Dataset):
    def __init__(self, rows, noise):
        self.rows, self.noise = rows, noise

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        x, y = self.rows[i]
        return x + self.noise * torch.randn_like(x), y


def log_main(msg):
    if dist.get_rank() == 0:
        print(msg, flush=True)


def worker():
    set_seed(SEED, device_specific=True)  # augmentation noise differs per rank
    rows = load_rows()
    train_rows, val_rows = split_train_val(rows, val_fraction=0.2)
    train_ds = NoisyRows(train_rows, noise=0.05)
    sampler = DistributedSampler(train_ds, seed=SEED)
    loader = DataLoader(train_ds, batch_size=8, sampler=sampler)
    log_main(f"train rows {len(train_ds)}, val rows {len(val_rows)}, batches per rank {len(loader)}")

    torch.manual_seed(SEED)  # the same initial weights (DDP would broadcast them anyway)
    model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        running = torch.zeros(2)
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)  # WAITS
            loss.backward()  # WAITS
            opt.step()
            running += torch.tensor([loss.item(), 1.0])
        dist.all_reduce(running)  # WAITS
        log_main(f"epoch {epoch} mean loss {running[0] / running[1]:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
