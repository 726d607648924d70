"""Two pipeline stages exchange activations and gradients with batched isend/irecv, both sending "first".

Source: NVIDIA/Megatron-LM, megatron/core/pipeline_parallel/p2p_communication.py (``_batched_p2p_ops``: the
sends and receives of ``send_forward_recv_backward`` / ``send_backward_recv_forward`` are put in one
``torch.distributed.batch_isend_irecv`` call, so the order in which each rank lists them cannot deadlock).
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5


def batched_p2p(tensor_send, tensor_recv, peer):
    ops = [dist.P2POp(dist.isend, tensor_send, peer), dist.P2POp(dist.irecv, tensor_recv, peer)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()


def worker():
    rank = dist.get_rank()
    peer = 1 - rank
    stage = torch.nn.Linear(4, 4)
    received = torch.zeros(4)
    for microbatch in range(3):
        if rank == 0:  # send_forward_recv_backward
            activation = stage(torch.ones(4) * microbatch).detach()
            batched_p2p(activation, received, peer)
        else:  # send_backward_recv_forward (the gradient of the previous microbatch)
            grad = torch.ones(4) * (microbatch - 1)
            batched_p2p(grad, received, peer)
    return received.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
