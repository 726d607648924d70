"""Promise 4 (exercise checks are right) for notebook 01's check_vocab.

A right answer that barriers on a group it made with dist.new_group() (every rank makes it, as torch requires)
passes, but the verdict adds "(the new_group before the build is not needed: it makes every rank wait and orders
nothing the readers need)": it tells the learner to delete the line that makes the group the barrier uses.
Cause: exercises/nb01.py _judge counts every recorded collective that ended before the build as an extra barrier
(`before = [e for e in run[0].events if e.is_collective and ...]`), new_group included.
"""

import os
import sys
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab


def build_vocab_then_read(folder, build_seconds):
    group = dist.new_group()  # the group the barrier below uses
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    dist.barrier(group=group)
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


if __name__ == "__main__":
    os.environ["BARRIERLAB_LIVE"] = "0"
    verdict = check_vocab(build_vocab_then_read, quiet=True, seed=1)
    text = str(verdict)
    print(text)
    if text.startswith("✓") and "new_group before the build is not needed" not in text:
        print("held")
        sys.exit(0)
    print("BROKEN: the check's remark tells the learner to remove the new_group() the barrier needs")
    sys.exit(1)
