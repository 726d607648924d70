"""Epoch checkpoints rotated with a keep-last-2 limit that forgets the best one; best model loaded at the end.

Models the HF Trainer's ``save_total_limit`` + ``load_best_model_at_end`` pair (transformers ``trainer.py``
``_sorted_checkpoints`` / ``_rotate_checkpoints``; the ``TrainingArguments`` doc of ``save_total_limit``: "the
best checkpoint will always be retained"; transformers issue #20988, best-model loading after the limit deleted
checkpoints) written in a learner's own DDP loop: ``DistributedSampler`` with ``set_epoch``, a validation loss
all-reduced on every rank, rank 0 saving one checkpoint per epoch and tracking the best one, rotation on rank 0,
and at the end rank 0 loading the best checkpoint and broadcasting it with ``broadcast_object_list``.

The validation split is a drifted site (stand-in: its targets are negated), so the validation loss is lowest
after the first epoch: the best checkpoint is ``epoch-0``.

The bug: the rotation keeps the newest ``KEEP_LAST`` checkpoints and nothing else; it does not take the best one
out of the deletion candidates. ``epoch-0`` is deleted at the end of epoch 2 without any error. Two epochs
later, ``load_best`` raises ``FileNotFoundError`` in rank 0's ``torch.load`` while rank 1 waits in the
``broadcast_object_list`` for the state that never comes.
"""
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 5
KEEP_LAST = 2


def datasets():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 6, generator=g)
    w = torch.randn(6, 1, generator=g)
    train = TensorDataset(x, x @ w)
    vx = torch.randn(16, 6, generator=g)
    val = TensorDataset(vx, -(vx @ w))  # drifted site (stand-in)
    return train, val


def shared_dir():
    holder = [tempfile.mkdtemp(prefix="r23_best_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def validate(model, val):
    model.eval()
    with torch.no_grad():
        x, y = val.tensors
        part = slice(dist.get_rank(), None, dist.get_world_size())
        stats = torch.tensor([nn.functional.mse_loss(model(x[part]), y[part], reduction="sum").item(),
                              float(len(x[part]))])
    dist.all_reduce(stats)
    model.train()
    return (stats[0] / stats[1]).item()


def sorted_checkpoints(out_dir):
    names = [n for n in os.listdir(out_dir) if n.startswith("epoch-")]
    return sorted(names, key=lambda n: int(n.split("-")[1]))


def rotate_checkpoints(out_dir, best):
    checkpoints = sorted_checkpoints(out_dir)  # BUG
    for name in checkpoints[:max(0, len(checkpoints) - KEEP_LAST)]:
        os.remove(os.path.join(out_dir, name))


def load_best(out_dir, best):
    holder = [None]
    if dist.get_rank() == 0:
        holder[0] = torch.load(os.path.join(out_dir, best))
    dist.broadcast_object_list(holder, src=0)  # WAITS
    return holder[0]


def worker():
    rank = dist.get_rank()
    out_dir = shared_dir()
    try:
        train, val = datasets()
        torch.manual_seed(0)
        model = DDP(nn.Linear(6, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        sampler = DistributedSampler(train, shuffle=True, seed=0)
        loader = DataLoader(train, batch_size=8, sampler=sampler)
        best, best_loss = None, float("inf")
        for epoch in range(EPOCHS):
            sampler.set_epoch(epoch)
            for x, y in loader:
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
            val_loss = validate(model, val)
            if val_loss < best_loss:
                best, best_loss = f"epoch-{epoch}", val_loss
            if rank == 0:
                torch.save(model.module.state_dict(), os.path.join(out_dir, f"epoch-{epoch}"))
                rotate_checkpoints(out_dir, best)
                print(f"epoch {epoch}: val {val_loss:.3f}, best {best}, kept {sorted_checkpoints(out_dir)}")
        state = load_best(out_dir, best)  # WAITS
        model.module.load_state_dict(state)
        print(f"[rank {rank}] loaded {best}: val {validate(model, val):.3f}")
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
