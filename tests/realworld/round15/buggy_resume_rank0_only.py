"""Resume from the previous run's checkpoint on rank 0 only (buggy): the ranks run different numbers of epochs.

Models pytorch/examples ``imagenet/main.py`` (the ``--resume`` block, which every process runs: ``torch.load``,
``args.start_epoch = checkpoint['epoch']``, ``best_acc1``, then ``for epoch in range(args.start_epoch,
args.epochs)`` with ``train_sampler.set_epoch(epoch)``) and the PyTorch DDP tutorial's "Save and Load
Checkpoints" section, as a learner rewrites them after reading that DDP's constructor broadcasts rank 0's
parameters: "so only rank 0 needs to load the checkpoint".

The learner's first DDP script: a small classifier, a ``DataLoader`` over a ``DistributedSampler``, one
evaluation per epoch (correct/total all-reduced), rank 0 saving after each epoch. The job was preempted after
2 of 4 epochs (``previous_run_left_checkpoint`` stands in for it).

Bug: the resume block is guarded by ``rank == 0``. The weights do reach rank 1 through DDP's broadcast, but
``start_epoch`` does not: rank 0 trains epochs 2-3, rank 1 epochs 0-3. Their first two epochs pair up (same
collectives), then rank 0 waits in the final barrier while rank 1 is in the gradient all-reduce of its third
epoch's ``loss.backward()``.
"""
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 4


def make_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def make_datasets():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return TensorDataset(x[:64], y[:64]), TensorDataset(x[64:], y[64:])


def shared_run_dir():
    box = [tempfile.mkdtemp(prefix="r15_resume_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def previous_run_left_checkpoint(path):
    """Stand-in for the preempted job: it finished epochs 0 and 1 and saved after epoch 1."""
    if dist.get_rank() == 0:
        torch.manual_seed(1)
        model = make_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        torch.save({"epoch": 2, "state_dict": model.state_dict(), "best_acc1": 0.5,
                    "optimizer": optimizer.state_dict()}, path)
    dist.barrier()


def train_one_epoch(loader, model, criterion, optimizer):
    model.train()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()


def validate(loader, model):
    model.eval()
    counts = torch.zeros(2)
    with torch.no_grad():
        for x, y in loader:
            counts[0] += (model(x).argmax(1) == y).sum()
            counts[1] += y.numel()
    dist.all_reduce(counts)
    return (counts[0] / counts[1]).item()


def worker():
    rank = dist.get_rank()
    run_dir = shared_run_dir()
    resume = os.path.join(run_dir, "checkpoint.pth.tar")
    try:
        previous_run_left_checkpoint(resume)

        torch.manual_seed(0)
        model = make_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        start_epoch, best_acc1 = 0, 0.0
        if rank == 0 and os.path.isfile(resume):  # BUG
            checkpoint = torch.load(resume, map_location="cpu")
            start_epoch = checkpoint["epoch"]
            best_acc1 = checkpoint["best_acc1"]
            model.load_state_dict(checkpoint["state_dict"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            print(f"rank {rank}: => loaded checkpoint (epoch {start_epoch})", flush=True)
        model = DDP(model)

        train_set, val_set = make_datasets()
        train_sampler = DistributedSampler(train_set, shuffle=True)
        train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
        val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set, shuffle=False))

        for epoch in range(start_epoch, EPOCHS):
            train_sampler.set_epoch(epoch)
            train_one_epoch(train_loader, model, criterion, optimizer)  # WAITS
            acc1 = validate(val_loader, model)
            best_acc1 = max(acc1, best_acc1)
            if rank == 0:
                torch.save({"epoch": epoch + 1, "state_dict": model.module.state_dict(), "best_acc1": best_acc1,
                            "optimizer": optimizer.state_dict()}, resume)
                print(f"epoch {epoch}: acc1 {acc1:.3f} (best {best_acc1:.3f})", flush=True)
        dist.barrier()  # WAITS
    finally:
        if rank == 0:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
