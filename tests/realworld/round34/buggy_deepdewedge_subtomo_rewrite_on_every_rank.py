"""DeepDeWedge (MLI-lab) on Lightning DDP: the periodic missing-wedge update rewrites every sub-tomogram file on every
rank, while the next epoch's reads are sharded across ranks.

Models: MLI-lab/DeepDeWedge issue #40 ("Race condition during `update_subtomo_missing_wedges` during multi-GPU
training": "`LitUnet3D.on_train_epoch_end` runs on every DDP rank and ... calls `update_subtomo_missing_wedges()`",
which builds a non-distributed ``DataLoader`` over the full sub-tomogram set and ``torch.save``s every result to the same
paths; "`torch.save` truncates the target in place before re-writing the zip, so a second writer (or a reader) sees a
half-written / truncated archive", reported as "PytorchStreamReader failed reading zip archive: failed finding central
directory") and PR #41 (rank-0-only rewrite plus a barrier). Code modelled (written here, not copied):
``ddw/utils/unet.py`` ``LitUnet3D`` (``training_step``, ``on_train_epoch_end`` with the update milestones) and
``update_subtomo_missing_wedges``; the sub-tomogram dataset reading one ``.pt`` file per item; Lightning's training
loop with the ``DistributedSampler`` it injects (stand-ins: a DDP loop, the rank-0-only example-slice logging).
Timing stand-ins that make the race deterministic: each file write takes 0.4 s (a slow shared filesystem; written in
chunks), rank 0's logging of example slices before the update takes 1.0 s.

The bug: every rank rewrites every file; rank 1 finishes its rewrite first and, in the next epoch, loads
``subtomo_1.pt`` while rank 0 is halfway through rewriting it -- rank 1 raises, rank 0 then waits in the next
DDP backward. 2 ranks.
"""

import datetime
import io
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

N_SUBTOMOS = 4
WRITE_SECONDS = 0.4
UPDATE_EPOCHS = (0,)


def slow_save(tensor, path):
    buf = io.BytesIO()
    torch.save(tensor, buf)
    data = buf.getvalue()
    step = (len(data) + 7) // 8
    with open(path, "wb") as f:
        for i in range(0, len(data), step):
            f.write(data[i:i + step])
            f.flush()
            time.sleep(WRITE_SECONDS / 8)


class SubtomoDataset:
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        subtomo = torch.load(self.files[idx])
        return subtomo, subtomo.flip(-1)


def shard_batches(dataset, rank, world_size, batch_size):
    indices = list(range(rank, len(dataset), world_size))
    for i in range(0, len(indices), batch_size):
        items = [dataset[j] for j in indices[i:i + batch_size]]
        yield torch.stack([a for a, _ in items]), torch.stack([b for _, b in items])


class Unet3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv3d(1, 4, 3, padding=1)
        self.dec = nn.Conv3d(4, 1, 3, padding=1)

    def forward(self, x):
        return self.dec(F.relu(self.enc(x)))


class LitUnet3D:
    def __init__(self, files):
        self.unet = Unet3D()
        self.files = files

    def log_example_slices(self):
        time.sleep(1.0)

    def update_subtomo_missing_wedges(self):
        with torch.no_grad():
            for path in self.files:
                subtomo = torch.load(path)
                slow_save(0.5 * subtomo + 0.5 * self.unet(subtomo.unsqueeze(0))[0], path)

    def on_train_epoch_end(self, trainer, epoch):
        if trainer.is_global_zero:
            self.log_example_slices()
        if epoch in UPDATE_EPOCHS:
            self.update_subtomo_missing_wedges()  # BUG


class Trainer:
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    @property
    def is_global_zero(self):
        return dist.get_rank() == 0

    def fit(self, lit, dataset):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        model = DDP(lit.unet)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(self.max_epochs):
            for x, y in shard_batches(dataset, rank, world_size, batch_size=2):
                loss = F.mse_loss(model(x), y)  # WAITS
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"[rank {rank}] epoch {epoch}: loss {loss.item():.4f}", flush=True)
            lit.on_train_epoch_end(self, epoch)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    data_dir = os.path.join(tempfile.gettempdir(), f"r34_ddw_{os.environ.get('MASTER_PORT', '0')}")
    files = [os.path.join(data_dir, f"subtomo_{i}.pt") for i in range(N_SUBTOMOS)]
    if rank == 0:
        os.makedirs(data_dir, exist_ok=True)
        gen = torch.Generator().manual_seed(3)
        for path in files:
            torch.save(torch.randn(1, 8, 8, 8, generator=gen), path)
    dist.barrier()
    lit = LitUnet3D(files)
    Trainer(max_epochs=2).fit(lit, SubtomoDataset(files))  # WAITS
    dist.barrier()
    if rank == 0:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
