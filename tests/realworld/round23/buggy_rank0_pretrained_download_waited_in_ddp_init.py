"""Rank 0 downloads pretrained weights for longer than the training timeout; the others wait in the DDP constructor.

Models the "only the main process downloads, DDP broadcasts the weights" pattern of many fine-tuning scripts
(timm / torchvision ``pretrained=True`` under ``if rank == 0``; the DDP constructor's
``_verify_param_shape_across_processes`` and ``_sync_module_states`` broadcast rank 0's parameters). The
process group has a short timeout (``TIMEOUT`` = 4 s, chosen so that a real hang during training is reported
quickly; transformers' ``ddp_timeout`` documentation and Lightning's ``_InfiniteBarrier`` are about exactly this
conflict with long rank-0 work).

The bug: nothing makes the other ranks wait for the download on a group whose timeout fits it; rank 1 goes
straight into ``DDP(model)``, whose first collective (the parameter-shape all-gather) is on the 4 s group.
There is no barrier and no rank test around the collective in the user's code: rank 1 times out inside the
constructor after 4 s, and rank 0 arrives there 3 s later and loses its peer. The correct twin waits on a gloo
group made on every rank with a 30-minute timeout before the constructor.

Stand-in: ``download_pretrained`` sleeps 7 s (a slow hub download) and returns fixed weights.
"""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def download_pretrained():
    """Stand-in for the outside world: a 7 s download of the backbone weights."""
    time.sleep(7)
    g = torch.Generator().manual_seed(1234)
    return {"0.weight": torch.randn(16, 8, generator=g), "0.bias": torch.zeros(16)}


def build_model():
    torch.manual_seed(dist.get_rank())
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def worker():
    rank = dist.get_rank()
    model = build_model()
    if rank == 0:
        model.load_state_dict(download_pretrained(), strict=False)
        print("[rank 0] pretrained backbone loaded")
    model = DDP(model)  # BUG # WAITS
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(10):
        x = torch.randn(16, 8, generator=g)
        y = (x[:, 0] > 0).long()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    first = model.module[0].weight.detach().clone()
    dist.all_reduce(first)
    print(f"[rank {rank}] final loss {loss.item():.4f}, replicas agree:",
          torch.allclose(first / dist.get_world_size(), model.module[0].weight))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
