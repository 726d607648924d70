# Conditions that are the same on every rank, and loops with the same length.
# expect: none
import torch
import torch.distributed as dist


def fit(model, optimizer, loader, epochs):
    world_size = dist.get_world_size()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world_size
            optimizer.step()
        if epoch % 10 == 0:
            dist.barrier()
        if world_size > 1 and epoch == epochs - 1:
            dist.barrier()
