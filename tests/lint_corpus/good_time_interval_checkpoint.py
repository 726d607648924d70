# The fix of bad_time_interval_checkpoint.py: rank 0 reads its clock and broadcasts the decision, so every
# rank saves at the same step (Lightning's ModelCheckpoint does this for train_time_interval). Timing the
# step for a log line needs no agreement. Written here.
# expect: none
import time

import torch
import torch.distributed as dist


def save(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    dist.barrier()


def train(model, batches, opt, every_seconds=1800.0):
    last = time.monotonic()
    for x, y in batches:
        started = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        due = torch.tensor([time.monotonic() - last > every_seconds], dtype=torch.uint8)
        dist.broadcast(due, src=0)
        if due.item():
            save(model, "last.pt")
            last = time.monotonic()
        if time.perf_counter() - started > 5.0:
            print(f"slow step on rank {dist.get_rank()}")
