# DistributedSampler pads every rank to the same number of samples, so the
# loop below runs the same number of times everywhere.
# expect: none
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main(dataset, model, epochs=3):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    sampler = DistributedSampler(dataset, rank=dist.get_rank(), shuffle=True)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        running = torch.zeros(1, device=device)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            running += loss.detach()
        dist.all_reduce(running)
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
    dist.destroy_process_group()
