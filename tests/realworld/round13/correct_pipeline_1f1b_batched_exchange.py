"""A two-stage 1F1B pipeline whose combined "send one way, receive the other" steps are one batched exchange.

Modelled on NVIDIA/Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``
(``forward_backward_pipelining_without_interleaving``: warm-up forwards, a steady state of
``send_forward_recv_backward`` on the earlier stage against ``send_backward_recv_forward`` on the later one, a
cool-down of backwards) and ``p2p_communication.py`` (``_communicate`` posts the send and the receive together
with ``torch.distributed.batch_isend_irecv`` and waits for every request), on pytorch/pytorch PR #152938 (on
gloo ``batch_isend_irecv`` returns one work object per operation: wait for all of them, not one ``pop()``) and
on NVIDIA/nccl issue #479 (group the send and the receive).

In each steady-state step both stages send and receive at the same time, in opposite directions; because both
operations of a step are posted before either is waited for, each rank's send finds the peer's receive.
What looks suspicious and is right: the two stages run different code paths with different numbers of
point-to-point calls; the single-direction sends and receives at the start and end of the schedule are
blocking; the receive buffers come from ``torch.empty``.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MICRO_BATCHES = 4
HIDDEN = 8


def send_forward(activation):
    dist.send(activation.detach(), dst=1)


def recv_forward():
    buffer = torch.empty(2, HIDDEN)
    dist.recv(buffer, src=0)
    return buffer.requires_grad_()


def send_backward(grad):
    dist.send(grad, dst=0)


def recv_backward():
    buffer = torch.empty(2, HIDDEN)
    dist.recv(buffer, src=1)
    return buffer


def exchange(tensor_send, peer, recv_shape):
    buffer = torch.empty(recv_shape)
    ops = [dist.P2POp(dist.isend, tensor_send, peer), dist.P2POp(dist.irecv, buffer, peer)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    return buffer


def send_forward_recv_backward(activation):
    return exchange(activation.detach(), 1, (2, HIDDEN))


def send_backward_recv_forward(grad):
    return exchange(grad, 0, (2, HIDDEN)).requires_grad_()


def first_stage(stage, inputs):
    outputs = []
    outputs.append(stage(inputs[0]))  # warm-up: one forward (num_stages - stage_index - 1)
    send_forward(outputs[0])
    for i in range(MICRO_BATCHES):
        if i + 1 < MICRO_BATCHES:
            outputs.append(stage(inputs[i + 1]))
            grad = send_forward_recv_backward(outputs[i + 1])
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
            activation = send_backward_recv_forward(activation.grad)
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
            first_stage(stage, inputs)
        else:
            losses = last_stage(stage, targets)
            print(f"step {step}: mean micro-batch loss {sum(losses) / len(losses):.4f}", flush=True)
        optimizer.step()
    dist.barrier()
    print(f"rank {rank}: pipeline done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
