# The same preemption handler with the flag agreed every step (an all_reduce with MAX, the way Megatron-LM's
# DistributedSignalHandler all-gathers it), so every rank saves and stops at the same step. Written here.
# expect: none
import signal

import torch
import torch.distributed as dist

STOP = False


def on_sigterm(signum, frame):
    global STOP
    STOP = True


def save(step):
    dist.barrier()


def train(steps, step_fn):
    signal.signal(signal.SIGTERM, on_sigterm)
    for step in range(steps):
        step_fn(step)
        stop = torch.tensor([int(STOP)])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            save(step)
            return step
    return steps
