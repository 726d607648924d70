# Point-to-point operations are meant to differ per rank; they are not flagged.
# expect: none
import torch
import torch.distributed as dist


def ping_pong(rank):
    t = torch.zeros(1)
    if rank == 0:
        t += 1
        dist.send(t, dst=1)
        dist.recv(t, src=1)
    elif rank == 1:
        dist.recv(t, src=0)
        t *= 2
        dist.send(t, dst=0)
    if rank == 0:
        req = dist.isend(t, dst=1)
    else:
        req = dist.irecv(t, src=0)
    req.wait()
    dist.barrier()
    return t
