"""DDP gradient compression (``fp16_compress_hook``) registered on every rank; rank 0 only reports the setting.

Models ``torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py`` ``fp16_compress_hook`` (each gradient
bucket cast to float16, all-reduced, cast back) and the DDP communication-hook docs ("register the hook before
the training loop", on the DDP model of every process), as accelerate's ``DistributedDataParallelKwargs(
comm_hook=DDPCommunicationHookType.FP16)`` and Lightning's ``DDPStrategy(ddp_comm_hook=...)`` register it in
their model setup on every process. A learner's ``configure_ddp`` helper reads the option, registers the hook on
every rank and prints the choice on rank 0; the training loop is a plain DDP classification loop over a
``DistributedSampler``.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

ARGS = {"comm_hook": "fp16", "epochs": 3, "lr": 0.1}


def configure_ddp(model, args, rank):
    ddp = DDP(model)
    if args["comm_hook"] == "fp16":
        ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    if rank == 0:
        print(f"gradient communication: {args['comm_hook']} compression")
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
            loss.backward()
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
