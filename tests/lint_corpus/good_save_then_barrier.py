# Rank 0 writes, then every rank waits at the same barrier.
# expect: none
import torch
import torch.distributed as dist


def save_checkpoint(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    dist.barrier()
    model.load_state_dict(torch.load(path, map_location="cpu"))
