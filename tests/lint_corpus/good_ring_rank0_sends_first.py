# The mpitutorial.com ring as the tutorial writes it: rank 0 sends first and receives last, every other rank
# receives then sends, so the token goes round once.
# expect: none
import torch
import torch.distributed as dist


def pass_token(rank, world_size):
    token = torch.zeros(1)
    left = (rank - 1) % world_size
    right = (rank + 1) % world_size
    if rank != 0:
        dist.recv(token, src=left)
        token += 1
    dist.send(token, dst=right)
    if rank == 0:
        dist.recv(token, src=left)
    return token
