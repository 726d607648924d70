"""A two-stage GPipe-style pipeline whose sender tags every micro-batch and whose receiver does not.

Models: pytorch/pytorch issue #94819 ("`tag` parameter is ignored from NCCL P2P isend/irecv pair") and issue
#125079 ("P2P Operations on NCCL do not respect tag"), closed by PR #125278, which documents that NCCL ignores
``tag`` while other backends match on it. A schedule written and tested on NCCL can pass a micro-batch index as
the tag on one side and nothing on the other without noticing; gloo matches sends and receives on (peer, tag).

What it does: stage 0 (rank 0) holds the first linear layer, stage 1 (rank 1) the second and the loss. For each of
3 micro-batches stage 0 sends its activation forward and stage 1 sends the activation's gradient back
(all forwards, then all backwards); then each stage steps its own optimizer.

The bug: ``send_forward`` / ``send_backward`` pass ``tag=microbatch`` but ``recv_forward`` / ``recv_backward``
use the default tag 0. Micro-batch 0 goes through (tag 0 on both sides). For micro-batch 1, rank 0 waits in
``dist.send(..., tag=1)`` and rank 1 waits in ``dist.recv(...)`` for a tag-0 message that never comes: both
hit the process-group timeout. (On NCCL the same code runs.)
"""
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MICRO_BATCHES = 3
HIDDEN = 8


def send_forward(act, microbatch):
    dist.send(act.detach(), dst=1, tag=microbatch)  # WAITS


def recv_forward(shape, microbatch):
    buf = torch.empty(shape)
    dist.recv(buf, src=0)  # BUG # WAITS
    return buf.requires_grad_()


def send_backward(grad, microbatch):
    dist.send(grad, dst=0, tag=1000 + microbatch)


def recv_backward(shape, microbatch):
    buf = torch.empty(shape)
    dist.recv(buf, src=1)
    return buf


def run_schedule(stage, rank, batches, targets):
    kept = []
    for mb, x in enumerate(batches):
        if rank == 0:
            out = stage(x)
            send_forward(out, mb)  # WAITS
            kept.append(out)
        else:
            inp = recv_forward((x.shape[0], HIDDEN), mb)  # WAITS
            out = stage(inp)
            loss = torch.nn.functional.mse_loss(out, targets[mb])
            kept.append((inp, loss))
    for mb in range(len(batches)):
        if rank == 0:
            grad = recv_backward(kept[mb].shape, mb)
            kept[mb].backward(grad)
        else:
            inp, loss = kept[mb]
            loss.backward()
            send_backward(inp.grad, mb)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    first = torch.nn.Linear(4, HIDDEN)
    second = torch.nn.Linear(HIDDEN, 2)
    stage = first if rank == 0 else second
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    batches = [torch.randn(5, 4) for _ in range(MICRO_BATCHES)]
    targets = [torch.randn(5, 2) for _ in range(MICRO_BATCHES)]
    for step in range(2):
        opt.zero_grad()
        run_schedule(stage, rank, batches, targets)  # WAITS
        opt.step()
    print(f"rank {rank}: pipeline done")
    dist.barrier()  # leave together: no rank tears its group down while a peer still talks to it


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
