# Rank 0 saves; the helper ends in a barrier that only rank 0 reaches.
# expect: 23 hidden-collective save_checkpoint -> dist.barrier
import torch
import torch.distributed as dist


def save_checkpoint(model, optimizer, epoch, path):
    torch.save(
        {"model": model.state_dict(), "optim": optimizer.state_dict(), "epoch": epoch},
        path,
    )
    dist.barrier()  # "make sure the file is written before anyone reads it"


def train(model, optimizer, loader, epochs, rank):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if rank == 0:
            save_checkpoint(model, optimizer, epoch, f"ckpt_{epoch}.pt")
