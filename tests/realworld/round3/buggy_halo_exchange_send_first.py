"""Neighbours exchange boundary rows with blocking send then recv: both send first.

Source: NVIDIA/nccl issue #479 ("Will the sequence of send and recv cause a deadlock?": rank 0 sends x0 then
receives x1, rank 1 sends x1 then receives x0, and both are stuck; the answer is to group them, or order them
by rank). The same program in torch.distributed on gloo: ``dist.send`` returns only once the peer has posted
the matching receive.

The bug: every rank calls the blocking ``send`` before its ``recv``.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def exchange_halo(field: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    peer = 1 - rank
    boundary = field[-1].clone() if rank == 0 else field[0].clone()
    halo = torch.empty_like(boundary)
    dist.send(boundary, dst=peer)  # BUG WAITS
    dist.recv(halo, src=peer)
    return halo


def worker():
    field = torch.arange(12, dtype=torch.float32).reshape(3, 4) + 100 * dist.get_rank()
    halo = exchange_halo(field)  # WAITS
    return halo.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
