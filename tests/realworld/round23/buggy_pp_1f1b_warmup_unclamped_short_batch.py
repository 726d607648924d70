"""Three-stage 1F1B pipeline whose warm-up count is not clamped to the number of micro-batches of the batch.

Models Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``
``forward_backward_pipelining_without_interleaving`` (and apex's copy
``transformer/pipeline_parallel/schedules/fwd_bwd_pipelining_without_interleaving.py``), written without the
line ``num_warmup_microbatches = min(num_warmup_microbatches, num_microbatches)``. Every full batch has 4
micro-batches, more than any stage's warm-up (2, 1, 0), so the first three batches train normally. The data set
does not divide into global batches (26 rows, global batch 8, micro-batch 2): the last batch of the epoch has
one micro-batch, and stage 0 still runs 2 warm-up forwards.

The bug: the warm-up count ``n_stages - stage - 1``. On the short batch stage 0's second
warm-up ``next(data_iterator)`` raises ``StopIteration`` (in ``forward_step``); stage 1 finished its one
forward and its cool-down backward and waits in ``req.wait()`` for the gradient it sent to stage 0; stage 2
finished the batch and waits in the next epoch's first ``recv`` from stage 1. The failure shows up at the end
of the first epoch, in the data iterator, far from the schedule arithmetic.

Hand-written stand-ins: the p2p helpers (``isend`` kept in a pending list, blocking ``recv``, all pending sends
waited at the end of the step, as Megatron's batched p2p does), a tanh MLP cut into three stages, and every
stage computing the number of micro-batches of a batch from the data-set size, as ``get_num_microbatches()``
is known on every rank. The first and last stages read their micro-batches with ``next(data_iterator)`` as
Megatron's ``get_batch`` does.
"""
import math

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

ROWS = 26
GLOBAL_BATCH = 8
MICRO_BATCH = 2
HIDDEN = 8


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, HIDDEN, generator=g)
    y = x.sum(dim=1, keepdim=True).tanh()
    return x, y


class P2P:
    def __init__(self, stage, n_stages):
        self.stage, self.n = stage, n_stages
        self.pending = []

    def recv_forward(self):
        if self.stage == 0:
            return None
        buf = torch.empty(MICRO_BATCH, HIDDEN)
        dist.recv(buf, src=self.stage - 1)  # WAITS
        return buf.requires_grad_()

    def send_forward(self, out):
        if self.stage < self.n - 1:
            self.pending.append(dist.isend(out.detach().contiguous(), dst=self.stage + 1))

    def recv_backward(self):
        if self.stage == self.n - 1:
            return None
        buf = torch.empty(MICRO_BATCH, HIDDEN)
        dist.recv(buf, src=self.stage + 1)
        return buf

    def send_backward(self, grad):
        if self.stage > 0:
            self.pending.append(dist.isend(grad.contiguous(), dst=self.stage - 1))

    def flush(self):
        for req in self.pending:
            req.wait()  # WAITS
        self.pending.clear()


def forward_step(module, stage, n_stages, inp, data_iterator):
    if stage in (0, n_stages - 1):
        micro_x, micro_y = next(data_iterator)
        if stage == 0:
            inp = micro_x
    out = module(inp)
    if stage == n_stages - 1:
        out = nn.functional.mse_loss(out, micro_y)
    return inp, out


def backward_step(p2p, stage, n_stages, saved, grad):
    inp, out = saved
    if stage == n_stages - 1:
        out.backward()
    else:
        out.backward(grad)
    if stage > 0:
        p2p.send_backward(inp.grad)


def one_f_one_b(module, p2p, stage, n_stages, num_microbatches, data_iterator):
    num_warmup = n_stages - stage - 1  # BUG
    remaining = num_microbatches - num_warmup
    saved, losses = [], []
    for i in range(num_warmup):
        inp = p2p.recv_forward()
        inp, out = forward_step(module, stage, n_stages, inp, data_iterator)
        p2p.send_forward(out)
        saved.append((inp, out))
    if remaining > 0:
        inp = p2p.recv_forward()  # WAITS
    for i in range(remaining):
        inp, out = forward_step(module, stage, n_stages, inp, data_iterator)
        p2p.send_forward(out)
        saved.append((inp, out))
        if stage == n_stages - 1:
            losses.append(out.item())
        grad = p2p.recv_backward()
        backward_step(p2p, stage, n_stages, saved.pop(0), grad)
        if i != remaining - 1:
            inp = p2p.recv_forward()
    for _ in range(num_warmup):
        grad = p2p.recv_backward()
        backward_step(p2p, stage, n_stages, saved.pop(0), grad)
    p2p.flush()  # WAITS
    return losses


def build_stage(stage, n_stages):
    torch.manual_seed(100 + stage)
    if stage == n_stages - 1:
        return nn.Linear(HIDDEN, 1)
    return nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh())


def worker():
    stage, n_stages = dist.get_rank(), dist.get_world_size()
    x, y = make_data()
    module = build_stage(stage, n_stages)
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
    p2p = P2P(stage, n_stages)
    for epoch in range(2):
        for start in range(0, ROWS, GLOBAL_BATCH):
            bx, by = x[start:start + GLOBAL_BATCH], y[start:start + GLOBAL_BATCH]
            num_microbatches = math.ceil(len(bx) / MICRO_BATCH)
            opt.zero_grad()
            data_iterator = zip(bx.split(MICRO_BATCH), by.split(MICRO_BATCH))
            losses = one_f_one_b(module, p2p, stage, n_stages, num_microbatches, data_iterator)  # WAITS
            opt.step()
            if losses:
                print(f"[stage {stage}] epoch {epoch} rows {start}-{start + len(bx)}: "
                      f"{num_microbatches} micro-batches, loss {sum(losses) / len(losses):.4f}")
    dist.barrier()


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
