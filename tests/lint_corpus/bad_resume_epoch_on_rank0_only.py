# Resuming on rank 0 only: the weights reach the other ranks (DDP broadcasts them when it wraps the model) but
# the start epoch does not, so rank 0 runs fewer epochs and the others wait in a collective it never makes.
# pytorch/examples imagenet/main.py's --resume block, moved under `if rank == 0` as learners do, written here.
# expect: 22 rank-dependent-loop dist.all_reduce
import os

import torch
import torch.distributed as dist

EPOCHS = 5


def train(model, path):
    rank = dist.get_rank()
    start_epoch = 0
    if rank == 0 and os.path.isfile(path):
        checkpoint = torch.load(path)
        start_epoch = checkpoint["epoch"]
        model.load_state_dict(checkpoint["state_dict"])
    for epoch in range(start_epoch, EPOCHS):
        loss = model(torch.ones(2)).sum()
        dist.all_reduce(loss)
