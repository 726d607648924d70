# A checkpoint every N minutes, decided on each rank's own clock: the ranks read their clocks at different
# moments (one rank's step took longer, or started later), so one rank saves - and enters the barrier inside
# the save - a step before the others, who are in the next step's all_reduce. Lightning's
# ModelCheckpoint(train_time_interval=...) broadcasts rank 0's decision for this reason, and Megatron-LM's
# --exit-duration-in-mins all-reduces its "time to stop" flag. The same shape as
# tests/realworld/round11's time-interval pair. Written here.
# expect: 28 hidden-collective save -> dist.barrier
# expect: 31 branch dist.all_reduce
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
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if time.monotonic() - last > every_seconds:
            save(model, "last.pt")
            last = time.monotonic()
        if time.time() > 1.0e12:  # past a wall-clock limit: report the loss
            dist.all_reduce(loss)
