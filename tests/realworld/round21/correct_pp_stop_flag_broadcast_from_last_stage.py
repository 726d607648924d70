"""Early stopping in a two-stage pipeline, the decision broadcast from the stage that owns the loss (correct).

Models: NVIDIA/Megatron-LM ``training.py`` / ``utils.py`` (the loss exists on the last pipeline stage only:
``is_last_rank``, ``print_rank_last``; exit decisions are made collective, e.g. the ``done_cuda`` all-reduce of
``exit_duration_in_mins``), Megatron's ``get_batch`` / ``broadcast_data`` for what the first stage knows, and the
``EarlyStopping(patience, min_delta)`` helpers of yolov5 / Lightning.

Stage 0 embeds, stage 1 computes the loss. After each epoch both stages run a validation pass; only stage 1 sees
the validation loss and feeds its ``EarlyStopping``. Its decision is turned into a tensor and broadcast from the
last stage, so both stages leave the epoch loop after the same epoch (the stopper fires after epoch 1 here:
``min_delta`` is large).
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

IN, HID, MB, EPOCHS = 6, 8, 8, 6
LAST_STAGE = 1


class EarlyStopping:
    def __init__(self, patience=1, min_delta=2.0):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.bad_epochs = float("inf"), 0

    def __call__(self, val_loss):
        if val_loss < self.best - self.min_delta:
            self.best, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def data(split):
    g = torch.Generator().manual_seed(0 if split == "train" else 1)
    x = torch.randn(4 * MB if split == "train" else 2 * MB, IN, generator=g)
    return x, x.sum(1, keepdim=True)


def pipeline_step(rank, stage, x, y, train):
    if rank == 0:
        h = stage(x)
        dist.send(h.detach(), dst=1)
        if train:
            grad = torch.empty_like(h)
            dist.recv(grad, src=1)
            h.backward(grad)
        return None
    h = torch.empty(x.shape[0], HID)
    dist.recv(h, src=0)
    h.requires_grad_(train)
    loss = nn.functional.mse_loss(stage(h), y)
    if train:
        loss.backward()
        dist.send(h.grad, dst=0)
    return loss.item()


def run_epoch(rank, stage, opt, split):
    x, y = data(split)
    losses = []
    for i in range(0, x.shape[0], MB):
        if split == "train":
            opt.zero_grad()
            losses.append(pipeline_step(rank, stage, x[i : i + MB], y[i : i + MB], True))
            opt.step()
        else:
            with torch.no_grad():
                losses.append(pipeline_step(rank, stage, x[i : i + MB], y[i : i + MB], False))
    return None if rank != LAST_STAGE else sum(losses) / len(losses)


def should_stop(stopper, val_loss):
    flag = torch.tensor([0])
    if dist.get_rank() == LAST_STAGE:
        flag[0] = int(stopper(val_loss))
    dist.broadcast(flag, src=LAST_STAGE)
    return bool(flag.item())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    stage = nn.Sequential(nn.Linear(IN, HID), nn.Tanh()) if rank == 0 else nn.Linear(HID, 1)
    opt = torch.optim.SGD(stage.parameters(), lr=0.05)
    stopper = EarlyStopping() if rank == LAST_STAGE else None
    for epoch in range(EPOCHS):
        run_epoch(rank, stage, opt, "train")
        val_loss = run_epoch(rank, stage, opt, "val")
        if rank == LAST_STAGE:
            print(f"epoch {epoch} val loss {val_loss:.4f}", flush=True)
        if should_stop(stopper, val_loss):
            break
    dist.barrier()
    if rank == 0:
        print(f"both stages stopped after epoch {epoch}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
