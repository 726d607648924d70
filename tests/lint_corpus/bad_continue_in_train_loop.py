# Rank 0 skips batches it considers bad; the others all_reduce without it.
# expect: 18 early-exit dist.all_reduce
import torch
import torch.distributed as dist


def train_epoch(model, optimizer, loader):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if rank == 0 and not torch.isfinite(loss):
            print(f"step {step}: skipping non-finite loss")
            continue
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        optimizer.step()
