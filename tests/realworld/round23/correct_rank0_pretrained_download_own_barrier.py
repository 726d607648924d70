"""Rank 0 downloads pretrained weights for longer than the training timeout; the others wait on a long-timeout group.

Models the "only the main process downloads, DDP broadcasts the weights" pattern of many fine-tuning scripts
(timm / torchvision ``pretrained=True`` under ``if rank == 0``; the DDP constructor's
``_verify_param_shape_across_processes`` and ``_sync_module_states`` broadcast rank 0's parameters), with the
wait for the slow download moved onto a gloo group made on every rank with a long timeout, as Lightning's
``_InfiniteBarrier`` (``lightning/fabric/utilities/distributed.py``) does and as transformers' ``ddp_timeout``
documentation advises for long preprocessing. The training group keeps a short timeout (``TIMEOUT`` = 4 s) so
that a real hang during training is reported quickly.

Stand-in: ``download_pretrained`` sleeps 7 s (a slow hub download) and returns fixed weights.
"""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
    setup_group = dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=30))
    model = build_model()
    if rank == 0:
        model.load_state_dict(download_pretrained(), strict=False)
        print("[rank 0] pretrained backbone loaded")
    dist.barrier(group=setup_group)
    model = DDP(model)
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
