"""A ring all-reduce written with point-to-point isend/recv, as the distributed tutorial builds it.

Source: pytorch/tutorials, intermediate_source/dist_tuto.rst ("Our Own Ring-Allreduce"): each rank ``isend``s
its buffer to the right neighbour, blocks in ``recv`` from the left one, accumulates, waits for its send, and
repeats ``size - 1`` times.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 5


def allreduce(send: torch.Tensor, recv: torch.Tensor) -> None:
    rank, size = dist.get_rank(), dist.get_world_size()
    send_buff = send.clone()
    recv_buff = send.clone()
    accum = send.clone()
    left = (rank - 1) % size
    right = (rank + 1) % size
    for i in range(size - 1):
        if i % 2 == 0:
            send_req = dist.isend(send_buff, right)
            dist.recv(recv_buff, left)
            accum[:] += recv_buff[:]
        else:
            send_req = dist.isend(recv_buff, right)
            dist.recv(send_buff, left)
            accum[:] += send_buff[:]
        send_req.wait()
    recv[:] = accum[:]


def worker():
    t = torch.full((4,), float(dist.get_rank() + 1))
    out = torch.zeros(4)
    allreduce(t, out)
    assert torch.all(out == 6.0), out
    return out.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
