"""DDP on a tiny model over gloo: gradients are averaged by all_reduce in backward hooks, with no barrier."""

import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def tiny_model() -> nn.Module:
    """Three small layers (4,866 parameters): with a 10 KB bucket cap, DDP packs their gradients in 2 buckets."""
    return nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))


def allreduce_hook(state, bucket):
    """DDP's default gradient sync, written in Python so it can be seen (as in torch's
    ``ddp_comm_hooks.default_hooks.allreduce_hook``): average one bucket of gradients with all_reduce."""
    grads = bucket.buffer()
    grads.div_(dist.get_world_size())
    work = dist.all_reduce(grads, async_op=True)  # returns at once; DDP waits for it at the end of backward
    return work.get_future().then(lambda fut: fut.value()[0])


def scenario(steps=3, slow_rank=None, delay=0.2, watch_buckets=True, bucket_cap_mb=0.01):
    rank = dist.get_rank()
    torch.manual_seed(rank)  # every rank starts from different random weights...
    model = tiny_model()
    before = sum(p.sum().item() for p in model.parameters())
    with span("DDP(model)"):
        ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)  # ...until DDP copies rank 0's weights to all
    after = sum(p.sum().item() for p in model.parameters())
    if watch_buckets:
        ddp.register_comm_hook(state=None, hook=allreduce_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)  # ...and every rank sees different data
    losses = []
    for step in range(steps):
        x, y = torch.randn(32, 8, generator=data), torch.randn(32, 2, generator=data)
        with span(f"forward {step}"):
            loss = nn.functional.mse_loss(ddp(x), y)
            if rank == slow_rank:
                time.sleep(delay)  # a slower rank (a bigger batch, a busier core)
        optimizer.zero_grad()
        with span(f"backward {step}", kind="other"):
            loss.backward()  # gradient buckets are all-reduced here, as they fill up
        with span(f"optimizer {step}"):
            optimizer.step()
        losses.append(round(loss.item(), 4))
    grads = torch.cat([p.grad.flatten() for p in ddp.parameters()])
    weights = torch.cat([p.detach().flatten() for p in ddp.parameters()])
    return {"weights before DDP": before, "weights after DDP": after, "losses": losses,
            "grads": grads, "weights": weights}


if __name__ == "__main__":
    torchrun_main(scenario)
