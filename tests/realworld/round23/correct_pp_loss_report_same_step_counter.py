"""Two-stage GPipe pipeline; every LOG_INTERVAL optimizer steps the last stage sends its loss to stage 0 for logging.

Models the logging side of pipeline training: Megatron-LM computes the loss on the last stage
(``is_pipeline_last_stage``; ``training.py`` ``training_log`` / ``print_rank_last``) while the logger of many
hand-written pipelines (the PyTorch "Training Transformer models using Pipeline Parallelism" tutorial,
``torch.distributed.pipelining`` examples, and the ``dist.send`` / ``dist.recv`` pipelines of
pytorch/tutorials ``dist_tuto.rst``) sits on rank 0, so the last stage hands the loss back with a point-to-point
send on logging steps. The two stages run different loops: the first stage walks its micro-batch data loader and
runs a step every ``MICRO_BATCHES`` micro-batches; the last stage runs a fixed number of steps. Both test the
logging interval on the same counter, the optimizer step, so the loss send and receive always pair up.

Hand-written stand-ins: a GPipe schedule (all forwards, then all backwards) with blocking ``send``/``recv``,
a two-layer regression model cut in two, the data set built identically on both stages (the last stage reads
the targets).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MICRO_BATCH = 4
MICRO_BATCHES = 2
LOG_INTERVAL = 4
HIDDEN = 16


def micro_batch_loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=MICRO_BATCH, shuffle=False)


def report_loss(step, loss=None):
    """Last stage: send its loss to rank 0; rank 0: receive and log it."""
    if dist.get_rank() == 1:
        dist.send(torch.tensor([loss]), dst=0)
    else:
        buf = torch.zeros(1)
        dist.recv(buf, src=1)
        print(f"step {step}: loss {buf.item():.4f}")


def run_first_stage(model, opt):
    pending = []
    step = 0
    for i, (x, _) in enumerate(micro_batch_loader()):
        pending.append(x)
        if len(pending) < MICRO_BATCHES:
            continue
        outs = []
        for mb in pending:
            out = model(mb)
            dist.send(out.detach(), dst=1)
            outs.append(out)
        opt.zero_grad()
        for out in outs:
            grad = torch.empty_like(out)
            dist.recv(grad, src=1)
            out.backward(grad)
        opt.step()
        pending = []
        step += 1
        if step % LOG_INTERVAL == 0:
            report_loss(step)
    return step


def run_last_stage(model, opt, num_steps):
    targets = [y for _, y in micro_batch_loader()]
    for step in range(1, num_steps + 1):
        inputs, losses = [], []
        for m in range(MICRO_BATCHES):
            act = torch.empty(MICRO_BATCH, HIDDEN)
            dist.recv(act, src=0)
            act.requires_grad_()
            y = targets[(step - 1) * MICRO_BATCHES + m]
            losses.append(nn.functional.mse_loss(model(act), y) / MICRO_BATCHES)
            inputs.append(act)
        opt.zero_grad()
        for act, loss in zip(inputs, losses):
            loss.backward()
            dist.send(act.grad, dst=0)
        opt.step()
        if step % LOG_INTERVAL == 0:
            report_loss(step, sum(l.item() for l in losses))
    return num_steps


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    num_steps = len(micro_batch_loader()) // MICRO_BATCHES
    if rank == 0:
        model = nn.Sequential(nn.Linear(8, HIDDEN), nn.Tanh())
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        done = run_first_stage(model, opt)
    else:
        model = nn.Linear(HIDDEN, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        done = run_last_stage(model, opt, num_steps)
    print(f"[stage {rank}] trained {done} steps")
    dist.barrier()


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
