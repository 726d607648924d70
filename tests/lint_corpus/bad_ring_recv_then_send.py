# A token passed around a ring, after the ring program of mpitutorial.com ("MPI Send and Receive"), written with
# torch.distributed and without the tutorial's one special case: there rank 0 sends first; here every rank
# first waits to receive from its left neighbour, so no rank ever sends.
# expect: 13 p2p-order dist.recv
import torch
import torch.distributed as dist


def pass_token(rank, world_size):
    token = torch.zeros(1)
    left = (rank - 1) % world_size
    right = (rank + 1) % world_size
    dist.recv(token, src=left)
    token += 1
    dist.send(token, dst=right)
    return token
