"""Every rank validates and the metrics are averaged with a helper's all_reduce; rank 0 alone saves.

Source: huggingface/pytorch-image-models, train.py (``validate``: ``reduced_loss = utils.reduce_tensor(loss.data,
args.world_size)`` on every rank; ``utils.distribute_bn(model, args.world_size, args.dist_bn == 'reduce')``
before it; ``saver.save_checkpoint`` only where ``utils.is_primary(args)``) and timm/utils/distributed.py. The
helpers live in another module (``r3_timm_utils``).
"""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r3_timm_utils as utils
from r3_shared import job_dir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 6


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def train_one_epoch(model, optimizer, rank):
    model.train()
    for step in range(3):
        x = torch.randn(4, 8) + rank
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(model, world_size):
    model.eval()
    losses = []
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 8)
            loss = model(x).pow(2).mean()
            losses.append(utils.reduce_tensor(loss.data, world_size).item())
    return {"loss": sum(losses) / len(losses)}


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = DDP(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        train_one_epoch(model, optimizer, rank)
        utils.distribute_bn(model, world_size, reduce=True)
        metrics = validate(model, world_size)
        if rank == 0:
            torch.save({"epoch": epoch, "state_dict": model.module.state_dict(), "metrics": metrics},
                       os.path.join(job_dir("timm"), "last.pth.tar"))
    return metrics


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
