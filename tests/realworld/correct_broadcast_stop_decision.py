"""Early stopping under DDP done right: rank 0 decides, broadcasts the decision, every rank breaks together.

Source: ultralytics/yolov5 PR #8345 ("Implementation of Early Stopping for DDP training"): train.py keeps a
``stop`` flag that the main process sets from ``EarlyStopping``; in DDP, ``broadcast_list = [stop if RANK == 0
else None]; dist.broadcast_object_list(broadcast_list, 0); stop = broadcast_list[0]`` on every rank, then
``if stop: break``.
Changed for the lab: a fake fitness that stops improving after epoch 2; gloo.
Expected: every rank stops after the same epoch.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class EarlyStopping:
    def __init__(self, patience=1):
        self.best_fitness, self.best_epoch, self.patience = 0.0, 0, patience

    def __call__(self, epoch, fitness):
        if fitness >= self.best_fitness:
            self.best_epoch, self.best_fitness = epoch, fitness
        return (epoch - self.best_epoch) >= self.patience


def worker():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    stopper, stop = EarlyStopping(patience=1), False
    epochs = 0
    for epoch in range(10):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            fitness = [0.1, 0.5, 0.6, 0.6, 0.4][min(epoch, 4)] - 0.05 * max(epoch - 2, 0)
            stop = stopper(epoch=epoch, fitness=fitness)
        broadcast_list = [stop if rank == 0 else None]
        dist.broadcast_object_list(broadcast_list, 0)
        if rank != 0:
            stop = broadcast_list[0]
        epochs += 1
        if stop:
            break
    return epochs


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
