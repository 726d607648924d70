# The same resume with the checkpoint loaded on every rank (as pytorch/examples imagenet/main.py does): every
# rank starts at the saved epoch.
# expect: none
import os

import torch
import torch.distributed as dist

EPOCHS = 5


def train(model, path):
    start_epoch = 0
    if os.path.isfile(path):
        checkpoint = torch.load(path)
        start_epoch = checkpoint["epoch"]
        model.load_state_dict(checkpoint["state_dict"])
    for epoch in range(start_epoch, EPOCHS):
        loss = model(torch.ones(2)).sum()
        dist.all_reduce(loss)
