"""A two-stage pipeline that splits each batch with ``torch.tensor_split``, so the first stage always makes the
schedule's number of micro-batches, even for a short last batch.

Source: modelled on pytorch/PiPPy PR #192 (``torch.chunk`` replaced by ``torch.tensor_split``, which always returns the
number of pieces asked for), fairscale ``fairscale/nn/pipe/microbatch.py`` ``scatter``, pytorch issue #126600
(uneven micro-batches across stages); the hand-written send/recv pipeline of ``torch.distributed`` tutorials (stage
0 sends each micro-batch's activation with its shape first, the last stage computes the loss and sends the
activation's gradient back).

Rank 0 is stage 0, rank 1 the last stage; 14 samples, batches of 8 (``drop_last=False``), 4 micro-batches. Correct,
though it looks suspicious: the micro-batches of the last batch have different sizes (2, 2, 1, 1 rows) and the last
stage learns each size from the shape message, not from its own arithmetic; its loop runs the fixed
``range(N_MICROBATCHES)`` while the first stage iterates over the pieces, which are exactly that many.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

N_MICROBATCHES = 4
BATCH_SIZE = 8
SAMPLES = 14  # batches of 8 and 6 rows: pieces of 2, 2, 2, 2 and 2, 2, 1, 1


def split_microbatches(batch):
    return torch.tensor_split(batch, N_MICROBATCHES)  # always N pieces (batch >= N rows)


def batches(tensor):
    return [tensor[i:i + BATCH_SIZE] for i in range(0, len(tensor), BATCH_SIZE)]  # drop_last=False


def send_activation(activation, dst):
    dist.send(torch.tensor(activation.shape, dtype=torch.int64), dst=dst)  # shape first
    dist.send(activation.contiguous(), dst=dst)


def recv_activation(src):
    shape = torch.empty(2, dtype=torch.int64)
    dist.recv(shape, src=src)
    activation = torch.empty(*shape.tolist())
    dist.recv(activation, src=src)
    return activation


def first_stage_step(stage, inputs):
    for micro in split_microbatches(inputs):
        out = stage(micro)
        send_activation(out.detach(), dst=1)
        grad = torch.empty_like(out)
        dist.recv(grad, src=1)
        out.backward(grad)


def last_stage_step(stage, targets):
    target_micro = split_microbatches(targets)
    total = 0.0
    for i in range(N_MICROBATCHES):  # the schedule's number of micro-batches
        activation = recv_activation(src=0).requires_grad_()
        loss = nn.functional.mse_loss(stage(activation), target_micro[i]) / N_MICROBATCHES
        loss.backward()
        dist.send(activation.grad, dst=0)
        total += loss.item()
    return total


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same data set and initial weights on both stages
    inputs = torch.randn(SAMPLES, 4)
    targets = inputs.sum(dim=1, keepdim=True)
    stage = nn.Sequential(nn.Linear(4, 16), nn.ReLU()) if rank == 0 else nn.Linear(16, 1)
    optimizer = torch.optim.SGD(stage.parameters(), lr=0.05)

    epoch_loss = torch.zeros(1)
    for x, y in zip(batches(inputs), batches(targets)):
        if rank == 0:
            first_stage_step(stage, x)
        else:
            epoch_loss += last_stage_step(stage, y)
        optimizer.step()
        optimizer.zero_grad()
    dist.broadcast(epoch_loss, src=1)  # the last stage reports the loss
    print(f"rank {rank}: epoch loss {epoch_loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
