"""A 1F1B pipeline's batched-p2p helper calls ``batch_isend_irecv`` with an empty op list on the first stage.

Models: NVIDIA/Megatron-LM ``megatron/core/pipeline_parallel/p2p_communication.py`` (``_batched_p2p_ops`` builds the
list of ``P2POp`` and calls ``torch.distributed.batch_isend_irecv`` only ``if len(ops) > 0``; the public helpers such as
``send_backward_recv_forward`` return early on the first stage) and ``schedules.py``
``forward_backward_pipelining_without_interleaving`` (warmup, 1F1B steady state, cooldown); FlagOpen/FlagScale's
``adaptor_p2p_communication.py`` copy of the same guard. The item is a learner's hand-written 2-stage 1F1B after
those files.

What it does: stage 0 (rank 0) runs ``Linear(8, 16) + ReLU`` on the data, stage 1 (rank 1) ``Linear(16, 4)`` and the
cross-entropy; each training step pushes 4 micro-batches through the 1F1B schedule, every exchange going through one
``_communicate(tensor_send_next, tensor_send_prev, recv_prev, recv_next)`` helper that batches the isend/irecv ops.

The bug: the learner's ``send_backward_recv_forward`` has no first-stage guard and relies on ``_communicate`` to do
nothing when there is nothing to exchange, but ``_communicate`` passes the empty list straight to
``dist.batch_isend_irecv``, which raises ``IndexError: list index out of range`` (it reads the group from the first op).
On stage 0 the first steady-state iteration has no input gradient to send back and no activation to receive, so rank
0 raises there; rank 1 has already received its second micro-batch, computes it and waits in ``req.wait()`` of its next
exchange (send the gradient, receive the third activation) for a peer that is gone.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MICRO = 4
MB_SIZE = 4
HIDDEN = 16


def _communicate(stage, tensor_send_next=None, tensor_send_prev=None, recv_prev=False, recv_next=False):
    ops = []
    tensor_recv_prev = tensor_recv_next = None
    if tensor_send_prev is not None:
        ops.append(dist.P2POp(dist.isend, tensor_send_prev, stage - 1))
    if recv_prev:
        tensor_recv_prev = torch.empty(MB_SIZE, HIDDEN)
        ops.append(dist.P2POp(dist.irecv, tensor_recv_prev, stage - 1))
    if recv_next:
        tensor_recv_next = torch.empty(MB_SIZE, HIDDEN)
        ops.append(dist.P2POp(dist.irecv, tensor_recv_next, stage + 1))
    if tensor_send_next is not None:
        ops.append(dist.P2POp(dist.isend, tensor_send_next, stage + 1))
    reqs = dist.batch_isend_irecv(ops)  # BUG
    for req in reqs:
        req.wait()  # WAITS
    return tensor_recv_prev, tensor_recv_next


def recv_forward(stage, num_stages):
    if stage == 0:
        return None
    return _communicate(stage, recv_prev=True)[0]


def send_forward(output, stage, num_stages):
    if stage == num_stages - 1:
        return
    _communicate(stage, tensor_send_next=output.detach())


def recv_backward(stage, num_stages):
    if stage == num_stages - 1:
        return None
    return _communicate(stage, recv_next=True)[1]


def send_backward(input_grad, stage, num_stages):
    if stage == 0:
        return
    _communicate(stage, tensor_send_prev=input_grad)


def send_forward_recv_backward(output, stage, num_stages):
    if stage == num_stages - 1:
        return None
    return _communicate(stage, tensor_send_next=output.detach(), recv_next=True)[1]


def send_backward_recv_forward(input_grad, stage, num_stages):
    send = input_grad if stage > 0 else None
    return _communicate(stage, tensor_send_prev=send, recv_prev=stage > 0)[0]  # WAITS


def train_step(stage, num_stages, module, data, targets):
    def forward(i, inp):
        if stage == 0:
            return module(data[i])
        inp.requires_grad_()
        return F.cross_entropy(module(inp), targets[i]) / MICRO

    def backward(inp, out, out_grad):
        if stage == num_stages - 1:
            out.backward()
        else:
            out.backward(out_grad)
        return None if inp is None else inp.grad

    num_warmup = min(num_stages - stage - 1, MICRO)
    num_remaining = MICRO - num_warmup
    inputs, outputs, mb, total = [], [], 0, 0.0
    for _ in range(num_warmup):
        inp = recv_forward(stage, num_stages)
        out = forward(mb, inp)
        mb += 1
        send_forward(out, stage, num_stages)
        inputs.append(inp)
        outputs.append(out)
    inp = recv_forward(stage, num_stages) if num_remaining > 0 else None
    for i in range(num_remaining):
        last = i == num_remaining - 1
        out = forward(mb, inp)
        mb += 1
        if stage == num_stages - 1:
            total += out.item()
        out_grad = send_forward_recv_backward(out, stage, num_stages)
        inputs.append(inp)
        outputs.append(out)
        in_grad = backward(inputs.pop(0), outputs.pop(0), out_grad)
        if last:
            inp = None
            send_backward(in_grad, stage, num_stages)
        else:
            inp = send_backward_recv_forward(in_grad, stage, num_stages)  # WAITS
    for _ in range(num_warmup):
        out_grad = recv_backward(stage, num_stages)
        in_grad = backward(inputs.pop(0), outputs.pop(0), out_grad)
        send_backward(in_grad, stage, num_stages)
    return total


def worker():
    stage, num_stages = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(stage)
    module = nn.Sequential(nn.Linear(8, HIDDEN), nn.ReLU()) if stage == 0 else nn.Linear(HIDDEN, 4)
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for step in range(4):
        x = torch.randn(MICRO, MB_SIZE, 8, generator=g)
        y = (x.sum(-1) > 0).long() + 2 * (x[..., 0] > 0).long()
        opt.zero_grad()
        loss = torch.tensor([train_step(stage, num_stages, module, x, y)])  # WAITS
        opt.step()
        dist.broadcast(loss, src=num_stages - 1)
        if stage == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
