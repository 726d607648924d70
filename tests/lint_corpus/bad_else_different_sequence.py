# Both branches broadcast, but rank 0 adds a barrier the others never match.
# expect: 14 branch dist.barrier
import torch
import torch.distributed as dist


def share_config(config_tensor):
    rank = dist.get_rank()
    if rank == 0:
        config_tensor.copy_(torch.tensor([1.0, 2.0, 3.0]))
        dist.broadcast(config_tensor, src=0)
        with open("config.txt", "w") as f:
            f.write(str(config_tensor.tolist()))
        dist.barrier()
    else:
        dist.broadcast(config_tensor, src=0)
    return config_tensor
