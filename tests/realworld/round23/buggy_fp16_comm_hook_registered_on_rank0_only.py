"""DDP gradient compression (``fp16_compress_hook``) registered inside the rank-0 block that reports the setting.

Models ``torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py`` ``fp16_compress_hook`` (each gradient
bucket cast to float16, all-reduced, cast back) and the DDP communication-hook docs ("register the hook before
the training loop", on every process's DDP model; accelerate's ``DistributedDataParallelKwargs(comm_hook=...)``
and Lightning's ``DDPStrategy(ddp_comm_hook=...)`` do it on every process). A learner's ``configure_ddp`` helper
prints the choice on rank 0 and registers the hook in the same ``if`` block.

The bug: the hook exists on rank 0 only. Nothing calls a collective under the rank test: the hook is a
callback that DDP's reducer fires later, from ``loss.backward()``. In the first backward rank 0 all-reduces its
bucket as float16 (half the bytes), rank 1 all-reduces the same bucket as float32; gloo aborts one side on the
size mismatch and the other loses its peer inside ``loss.backward()``.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

ARGS = {"comm_hook": "fp16", "epochs": 3, "lr": 0.1}


def configure_ddp(model, args, rank):
    ddp = DDP(model)
    if rank == 0:
        print(f"gradient communication: {args['comm_hook']} compression")
        if args["comm_hook"] == "fp16":
            ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)  # BUG
    return ddp


def dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 10, generator=g)
    return TensorDataset(x, (x[:, :3].sum(1) > 0).long())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    model = configure_ddp(model, ARGS, rank)
    opt = torch.optim.SGD(model.parameters(), lr=ARGS["lr"])
    data = dataset()
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(ARGS["epochs"]):
        sampler.set_epoch(epoch)
        total = torch.zeros(2)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()  # WAITS
            opt.step()
            total += torch.tensor([loss.item() * len(y), len(y)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean train loss {total[0] / total[1]:.4f}")


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
