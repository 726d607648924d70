"""MACE (ACEsuit/mace PR #1216, 2025-10, closes issue #1215; `mace/tools/train.py` `train()` epoch loop):
in distributed fits the early-stopping `patience` test sits under `if rank == 0`, so when the validation loss has
not improved for `patience` evaluations only rank 0 breaks out of the epoch loop; the other ranks start the next
epoch and wait in DDP's gradient all-reduce while rank 0 has moved on.

Here: 2 ranks, a tiny DDP-wrapped energy model, training targets that pull it away from the validation targets so
the validation loss rises after the first evaluation; patience 2, 6 epochs at most; every rank evaluates the same
validation set (as the loop's `valid_loss` is the same on every rank). After the loop every rank meets at the
end-of-training barrier.

Fix (the PR): rank 0 still makes the patience decision, but broadcasts it, and every rank breaks when told to.
"""
import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15
PATIENCE = 2
MAX_EPOCHS = 6


def train(model, opt, train_batches, valid_batch, rank):
    lowest_loss = float("inf")
    patience_counter = 0
    for epoch in range(MAX_EPOCHS):
        model.train()
        for x, y in train_batches:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            vx, vy = valid_batch
            valid_loss = torch.nn.functional.mse_loss(model.module(vx), vy).item()
        print(f"rank {rank} epoch {epoch} valid_loss {valid_loss:.4f}", flush=True)
        if valid_loss >= lowest_loss:
            patience_counter += 1
        else:
            lowest_loss = valid_loss
            patience_counter = 0
        stop = torch.zeros(1)
        if rank == 0 and patience_counter >= PATIENCE:
            stop[0] = 1
        dist.broadcast(stop, src=0)
        if stop.item():
            print(f"rank {rank}: stopping optimization after {PATIENCE} epochs without improvement", flush=True)
            break
    return epoch


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1 + rank)
    train_batches = [(torch.randn(8, 3, generator=g), torch.full((8, 1), 2.0)) for _ in range(2)]
    vg = torch.Generator().manual_seed(99)
    valid_batch = (torch.randn(16, 3, generator=vg), torch.full((16, 1), -2.0))
    last_epoch = train(model, opt, train_batches, valid_batch, rank)
    dist.barrier()
    print(f"rank {rank}: training complete after epoch {last_epoch}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
