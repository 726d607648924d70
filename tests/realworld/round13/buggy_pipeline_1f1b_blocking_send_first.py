"""A two-stage 1F1B pipeline whose combined "send one way, receive the other" steps are two blocking calls.

Modelled on NVIDIA/Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``
(``forward_backward_pipelining_without_interleaving``: warm-up forwards, a steady state that calls
``send_forward_recv_backward`` on the earlier stage while the later stage calls ``send_backward_recv_forward``,
a cool-down of backwards) and ``p2p_communication.py`` (both combined calls go through ``_communicate`` as one
``batch_isend_irecv``; the non-batched path orders its sends and receives by rank parity "to avoid deadlock"),
on pytorch/pytorch issue #172668 ("both ranks are waiting for the send to finish so that they can receive. But
neither of ranks are receiving") and on NVIDIA/nccl issue #479 (send-then-recv on both ranks hangs; group them).

``send_forward_recv_backward`` and ``send_backward_recv_forward`` are written as a blocking ``dist.send``
followed by a blocking ``dist.recv``. In the first steady-state step stage 0 sends micro-batch 1's activation
while stage 1 sends micro-batch 0's gradient: each waits for the other to post the matching receive. gloo's
send does not complete before the peer receives (any size: it waits for the receiver's buffer), so both ranks
wait in ``send`` until the group timeout.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MICRO_BATCHES = 4
HIDDEN = 8


def send_forward(activation):
    dist.send(activation.detach(), dst=1)  # WAITS


def recv_forward():
    buffer = torch.empty(2, HIDDEN)
    dist.recv(buffer, src=0)
    return buffer.requires_grad_()


def send_backward(grad):
    dist.send(grad, dst=0)  # WAITS


def recv_backward():
    buffer = torch.empty(2, HIDDEN)
    dist.recv(buffer, src=1)
    return buffer


def send_forward_recv_backward(activation):
    send_forward(activation)  # BUG  # WAITS
    return recv_backward()


def send_backward_recv_forward(grad):
    send_backward(grad)  # BUG  # WAITS
    return recv_forward()


def first_stage(stage, inputs):
    outputs = []
    outputs.append(stage(inputs[0]))  # warm-up: one forward (num_stages - stage_index - 1)
    send_forward(outputs[0])
    for i in range(MICRO_BATCHES):
        if i + 1 < MICRO_BATCHES:
            outputs.append(stage(inputs[i + 1]))
            grad = send_forward_recv_backward(outputs[i + 1])  # WAITS
        else:
            grad = recv_backward()
        outputs[i].backward(grad)


def last_stage(stage, targets):
    activation = recv_forward()
    losses = []
    for i in range(MICRO_BATCHES):
        loss = nn.functional.mse_loss(stage(activation), targets[i])
        loss.backward()
        losses.append(loss.item())
        if i + 1 < MICRO_BATCHES:
            activation = send_backward_recv_forward(activation.grad)  # WAITS
        else:
            send_backward(activation.grad)
    return losses


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    stages = [nn.Sequential(nn.Linear(4, HIDDEN), nn.Tanh()), nn.Linear(HIDDEN, 1)]
    stage = stages[rank]
    optimizer = torch.optim.SGD(stage.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(7)
    inputs = list(torch.randn(MICRO_BATCHES * 2, 4, generator=data).split(2))
    targets = list(torch.randn(MICRO_BATCHES * 2, 1, generator=data).split(2))
    for step in range(2):
        optimizer.zero_grad()
        if rank == 0:
            first_stage(stage, inputs)  # WAITS
        else:
            losses = last_stage(stage, targets)  # WAITS
            print(f"step {step}: mean micro-batch loss {sum(losses) / len(losses):.4f}", flush=True)
        optimizer.step()
    dist.barrier()
    print(f"rank {rank}: pipeline done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
