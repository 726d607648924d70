"""a06: notebook 04's check refuses two wrong answers with explanations that are not true of them.

Promise 4: a WRONG answer is refused with an explanation (a true one). Two answers a learner writes:

- (a) an async all_reduce whose result rank 0 reads before work.wait(): every rank contributed its loss; the
  refusal asks "Did every rank contribute its own validation loss, once?" and never names the early read;
- (b) no async call at all: every rank store.set()s its loss, rank 0 sleeps, then reads the keys that are
  there (store.check): the refusal says "an async_op=True call's result is in the tensor only after
  work.wait() returns, so read it after the wait" - about a call the answer does not make.
"""

import sys
import time

import torch
import torch.distributed as dist

from barrierlab.exercises import nb04
from barrierlab.scenarios.find_the_bug import local_loss, train_step


def _trained(steps):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    for step in range(1, steps + 1):
        train_step(model, rank, step)
    return rank, model


def read_before_wait(steps=4):
    rank, model = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(total, async_op=True)
    value = total.item() / dist.get_world_size()  # too early: before the wait
    work.wait()
    return value if rank == 0 else None


def store_after_a_sleep(steps=4):
    rank, model = _trained(steps)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"loss{rank}", repr(local_loss(model, rank)))
    if rank == 0:
        time.sleep(0.3)  # "long enough" for the others
        keys = [f"loss{r}" for r in range(dist.get_world_size())]
        values = [float(store.get(k)) if store.check([k]) else 0.0 for k in keys]
        return sum(values) / len(values)
    return None


broken = []
a = nb04.check(read_before_wait, seed=5)
print("(a)", a)
if a.ok:
    broken.append("(a) was accepted")
elif "contribute" in a.message and "wait" not in a.message:
    broken.append("(a) is told to check that every rank contributed; the early read before work.wait() is not named")
b = nb04.check(store_after_a_sleep, seed=5)
print("(b)", b)
if b.ok:
    broken.append("(b) was accepted")
elif "async_op=True" in b.message:
    broken.append("(b) makes no async call, yet is told to read an async_op=True call's result after work.wait()")
if broken:
    print("BROKEN:", "; ".join(broken))
    sys.exit(1)
print("held")
