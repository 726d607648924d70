"""A two-stage DDP script (pre-train, then fine-tune from the best checkpoint) whose checkpoint stores the best
balanced accuracy as a numpy scalar; the fine-tune stage's ``torch.load`` on rank 0 refuses it.

Models: PyTorch 2.6's release note "Flip default torch.load to weights_only" (the unpickler accepts tensors and plain
containers, not ``numpy`` scalars); automl/TFM-Playground PR #52 (``weights_only=False`` had been added for a numpy
random state in the checkpoint); lincc-frameworks/hyrax PR #544 and constantinpape/torch-em PR #488 (resume broken by
the flipped default); pytorch/examples ``imagenet/main.py`` (``best_acc1`` kept in the checkpoint dict, resume reads it
back); the rank-0 load + ``broadcast_object_list`` of the metadata is the usual "only rank 0 touches the file" idiom.

What it does: stage 1 trains a small classifier with DDP for two epochs; after each epoch every rank all-reduces
per-class correct/total counts and computes the balanced accuracy with ``np.mean`` over the per-class recalls; rank
0 saves ``{"model", "epoch", "best_acc"}`` when it improves. Stage 2 builds a fresh model; rank 0 loads the best
checkpoint and broadcasts ``(epoch, best_acc)`` to the others; DDP's constructor then broadcasts rank 0's weights.

The bug: ``best_acc`` is the ``numpy.float32`` that ``np.mean`` returned, stored as is. ``torch.load`` (default
``weights_only=True`` since 2.6) raises ``UnpicklingError: Weights only load failed`` on rank 0; rank 1 is already
waiting in the metadata broadcast and loses its peer.
"""

import os
import shutil
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_CLASSES = 3


def make_split(seed, n):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    x = torch.randn(n, 6, generator=g) + nn.functional.one_hot(y, 6).float() * 2.0
    return TensorDataset(x, y)


def build_model():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, NUM_CLASSES))


def balanced_accuracy(model, loader):
    correct = torch.zeros(NUM_CLASSES)
    total = torch.zeros(NUM_CLASSES)
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(1)
            for c in range(NUM_CLASSES):
                mask = y == c
                total[c] += mask.sum()
                correct[c] += (pred[mask] == c).sum()
    counts = torch.stack([correct, total])
    dist.all_reduce(counts)
    recalls = (counts[0] / counts[1].clamp(min=1)).numpy()
    return np.mean(recalls)


def save_checkpoint(path, model, epoch, best_acc):
    state = {
        "model": model.module.state_dict(),
        "epoch": epoch,
        "best_acc": best_acc,  # BUG
    }
    torch.save(state, path)


def pretrain(ckpt_path):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(build_model())
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train, val = make_split(1, 96), make_split(2, 48)
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    train_loader = DataLoader(train, batch_size=12, sampler=sampler)
    val_loader = DataLoader(val, batch_size=12, sampler=DistributedSampler(val, shuffle=False))
    best_acc = 0.0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        acc = balanced_accuracy(model, val_loader)
        if acc > best_acc:
            best_acc = acc
            if rank == 0:
                save_checkpoint(ckpt_path, model, epoch, best_acc)
        if rank == 0:
            print(f"pretrain epoch {epoch}: balanced acc {acc:.3f}", flush=True)
    dist.barrier()


def load_best(ckpt_path, model):
    meta = [None, None]
    if dist.get_rank() == 0:
        ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        meta = [ckpt["epoch"], ckpt["best_acc"]]
    dist.broadcast_object_list(meta, src=0)  # WAITS
    return meta


def finetune(ckpt_path):
    rank = dist.get_rank()
    model = build_model()
    epoch, best_acc = load_best(ckpt_path, model)  # WAITS
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = make_split(3, 48)
    loader = DataLoader(data, batch_size=12, sampler=DistributedSampler(data, shuffle=True, seed=1))
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print(f"fine-tuned from epoch {epoch} (best balanced acc {best_acc:.3f}), loss {loss.item():.3f}", flush=True)


def worker():
    holder = [tempfile.mkdtemp(prefix="r19_best_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    ckpt_path = os.path.join(holder[0], "best.pt")
    try:
        pretrain(ckpt_path)
        finetune(ckpt_path)  # WAITS
        dist.barrier()
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(holder[0], ignore_errors=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
