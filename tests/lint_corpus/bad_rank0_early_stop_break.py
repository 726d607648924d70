# Rank 0 decides to stop early and breaks; the other ranks start the next
# epoch and wait in all_reduce for a rank that has left the loop.
# expect: 15 early-exit dist.all_reduce
import torch
import torch.distributed as dist


def fit(model, optimizer, loader, epochs, patience=3):
    rank = dist.get_rank()
    best, bad_epochs = float("inf"), 0
    for epoch in range(epochs):
        total = torch.zeros(1)
        for x, y in loader:
            total += torch.nn.functional.mse_loss(model(x), y).detach()
        dist.all_reduce(total)
        if rank == 0:
            if total.item() < best:
                best, bad_epochs = total.item(), 0
            else:
                bad_epochs += 1
            if bad_epochs >= patience:
                break
