"""Accelerate's breakpoint API: a rank-local stop condition sets a trigger, every rank checks it with an
all_reduce, and all ranks break together.

Source: huggingface/accelerate PR #1940 ("Introduce breakpoint API", renamed ``set_trigger`` /
``check_trigger``): "if each process has a specific conditional ... a break can happen on process 0 but not
on process 1 ... this will cause the code to hang"; usage: ``if should_do_breakpoint(loss):
accelerator.set_trigger()`` then ``if accelerator.check_trigger(): break`` on every process.
Stand-in: tests/realworld/_standins/accelerate.
Expected: every rank stops at the same step.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from accelerate import Accelerator

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    accelerator = Accelerator()
    model = accelerator.prepare(torch.nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = 0
    for step in range(10):
        loss = model(torch.randn(4, 2)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        steps += 1
        if accelerator.process_index == 1 and step == 3:  # a condition only one process sees
            accelerator.set_trigger()
        if accelerator.check_trigger():
            break
    return steps


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
