"""a08: notebook 03's check with steps that are not a multiple of save_every refuses a correct train() with a
false explanation; with save_every > steps it blames the learner's code for its own arguments.

Promise 4 (a correct answer is accepted; a refusal's explanation is true) and promise 5 (bad arguments refused
first, naming the parameter). nb03.check(train, steps=5, save_every=2): the last checkpoint is step 4; every
rank correctly returns what load_checkpoint() read (4), and the check says "did not return the step of the
last checkpoint (5): got ['4']. Return what `load_checkpoint()` read." (nb03._judge compares with `steps`).
nb03.check(train, steps=4, save_every=8): no checkpoint can be written; the check runs the learner's code and
says "not every rank finished ... save_checkpoint() contains one" instead of refusing save_every.
"""

import os
import sys

import torch
import torch.distributed as dist

from barrierlab.exercises import nb03
from barrierlab.scenarios.hidden_collective import load_checkpoint, write_checkpoint


def train(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(ckpt_dir, "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)
        weights -= 0.1 * grad / world_size
        if step % save_every == 0:
            if rank == 0:
                write_checkpoint({"step": step, "weights": weights}, path, save_delay)
            dist.barrier()  # every rank: the checkpoint is complete before anyone reads it
    return load_checkpoint(path)["step"]


broken = []
base = nb03.check(train, seed=1)
print("default:", base)
assert base.ok, "the fix itself is refused at the notebook's arguments"
five = nb03.check(train, steps=5, save_every=2, seed=1)
print("steps=5, save_every=2:", five)
if not five.ok:
    broken.append("a correct train() is refused at steps=5, save_every=2 (the last checkpoint is step 4)")
try:
    eight = nb03.check(train, steps=4, save_every=8, seed=1)
    print("steps=4, save_every=8:", eight)
    if not eight.ok and "save_every" not in eight.message:
        broken.append("save_every > steps is not refused as an argument; the learner's run is blamed")
except ValueError as error:
    print("steps=4, save_every=8 refused:", error)
if broken:
    print("BROKEN:", "; ".join(broken))
    sys.exit(1)
print("held")
