"""Checkpoint rotation with ``save_total_limit=1`` and a tracked best checkpoint, newest kept (correct).

Models huggingface/transformers ``trainer.py``: ``_save_checkpoint`` (the main process writes the model and
optimizer into ``checkpoint-<step>``, every process writes its own ``rng_state_<process_index>.pth`` into the
same folder, the main process calls ``_rotate_checkpoints``), ``_sorted_checkpoints`` (the best checkpoint is
bubbled up to just before the newest checkpoint so that it is not deleted) and ``_rotate_checkpoints`` with its exception:
"If save_total_limit=1 with load_best_model_at_end=True, we could end up deleting the last checkpoint, which we
don't do to allow resuming" (``save_total_limit = 2`` then); ``load_best_model_at_end``.

A learner's DDP script in that style: a ``DataLoader`` over a ``DistributedSampler``, evaluation every epoch
with the loss all-reduced (so every rank tracks the same best checkpoint), rank 0 creating the checkpoint
folder and rotating, a barrier, then the other ranks adding their RNG state files. The validation split comes
from a shifted distribution (stand-in: its targets are the negated training function), so the validation loss
rises after the first epoch and ``checkpoint-1`` stays the best. With the exception in place the newest
checkpoint survives every rotation; at the end every rank loads the best model.
"""
import os
import re
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 4
SAVE_TOTAL_LIMIT = 1


def make_datasets():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 1, generator=g)
    x_train, x_val = torch.randn(48, 6, generator=g), torch.randn(16, 6, generator=g)
    return TensorDataset(x_train, x_train @ w), TensorDataset(x_val, -(x_val @ w))


def shared_output_dir():
    box = [tempfile.mkdtemp(prefix="r15_rotate_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def sorted_checkpoints(output_dir, best_model_checkpoint):
    found = []
    for name in os.listdir(output_dir):
        match = re.fullmatch(r"checkpoint-([0-9]+)", name)
        if match:
            found.append((int(match.group(1)), os.path.join(output_dir, name)))
    checkpoints = [path for _, path in sorted(found)]
    if best_model_checkpoint is not None:
        # Make sure we don't delete the best model: bubble it up to just before the newest one.
        i = checkpoints.index(best_model_checkpoint)
        for j in range(i, len(checkpoints) - 2):
            checkpoints[j], checkpoints[j + 1] = checkpoints[j + 1], checkpoints[j]
    return checkpoints


def rotate_checkpoints(output_dir, best_model_checkpoint):
    checkpoints = sorted_checkpoints(output_dir, best_model_checkpoint)
    if len(checkpoints) <= SAVE_TOTAL_LIMIT:
        return
    save_total_limit = SAVE_TOTAL_LIMIT
    if best_model_checkpoint is not None and SAVE_TOTAL_LIMIT == 1 and checkpoints[-1] != best_model_checkpoint:
        save_total_limit = 2
    for checkpoint in checkpoints[: max(0, len(checkpoints) - save_total_limit)]:
        print(f"Deleting older checkpoint [{os.path.basename(checkpoint)}] due to save_total_limit", flush=True)
        shutil.rmtree(checkpoint, ignore_errors=True)


def save_rng_state(checkpoint, rank):
    torch.save({"cpu": torch.get_rng_state()}, os.path.join(checkpoint, f"rng_state_{rank}.pth"))


def save_checkpoint(model, optimizer, output_dir, step, state):
    rank = dist.get_rank()
    checkpoint = os.path.join(output_dir, f"checkpoint-{step}")
    if rank == 0:
        os.makedirs(checkpoint)
        torch.save(model.module.state_dict(), os.path.join(checkpoint, "model.pt"))
        torch.save(optimizer.state_dict(), os.path.join(checkpoint, "optimizer.pt"))
        save_rng_state(checkpoint, rank)
        rotate_checkpoints(output_dir, state["best_model_checkpoint"])
    dist.barrier()
    if rank != 0:
        save_rng_state(checkpoint, rank)


def train_one_epoch(loader, model, optimizer):
    model.train()
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate(loader, model):
    model.eval()
    total = torch.zeros(2)
    with torch.no_grad():
        for x, y in loader:
            total[0] += nn.functional.mse_loss(model(x), y, reduction="sum")
            total[1] += y.numel()
    dist.all_reduce(total)
    return (total[0] / total[1]).item()


def worker():
    rank = dist.get_rank()
    output_dir = shared_output_dir()
    try:
        torch.manual_seed(0)
        model = DDP(nn.Linear(6, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        train_set, val_set = make_datasets()
        sampler = DistributedSampler(train_set, shuffle=True)
        train_loader = DataLoader(train_set, batch_size=8, sampler=sampler)
        val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set, shuffle=False))
        state = {"best_metric": None, "best_model_checkpoint": None}

        for epoch in range(1, EPOCHS + 1):
            sampler.set_epoch(epoch)
            train_one_epoch(train_loader, model, optimizer)
            eval_loss = evaluate(val_loader, model)
            if state["best_metric"] is None or eval_loss < state["best_metric"]:
                state["best_metric"] = eval_loss
                state["best_model_checkpoint"] = os.path.join(output_dir, f"checkpoint-{epoch}")
            save_checkpoint(model, optimizer, output_dir, epoch, state)
            if rank == 0:
                print(f"epoch {epoch}: eval_loss {eval_loss:.3f}; kept {sorted(os.listdir(output_dir))}", flush=True)

        dist.barrier()
        best = torch.load(os.path.join(state["best_model_checkpoint"], "model.pt"))
        model.module.load_state_dict(best)
        print(f"rank {rank}: loaded best model from {os.path.basename(state['best_model_checkpoint'])}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
