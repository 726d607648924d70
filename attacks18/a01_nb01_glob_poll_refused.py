"""Promise 4: a learner's CORRECT answer that uses another ordering primitive is accepted.

Notebook 01's exercise, answered with a marker file rank 0 creates after the vocabulary, which the other ranks
poll for before reading. Polled with os.path.exists the check accepts it; polled with glob.glob (or os.listdir)
-- the same wait, the same order on a local file system -- the check refuses it as a race "by timing alone".
Exits 0 when both are accepted, 1 when the glob one is refused.
"""

import glob
import os
import sys
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab


def exists_marker(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    done = os.path.join(folder, "DONE")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
            open(done, "w").close()  # the marker: made after the vocabulary is closed
    else:
        while not os.path.exists(done):
            time.sleep(0.01)
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def glob_marker(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    done = os.path.join(folder, "DONE")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
            open(done, "w").close()  # the marker: made after the vocabulary is closed
    else:
        while not glob.glob(os.path.join(folder, "DONE")):  # the same wait, through a listing
            time.sleep(0.01)
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def main() -> int:
    a = check_vocab(exists_marker, quiet=True, seed=1)
    b = check_vocab(glob_marker, quiet=True, seed=1)
    print("exists poll:", a)
    print("glob poll:  ", b)
    if a.ok and not b.ok:
        print("BROKEN: the same marker wait is accepted through os.path.exists and refused through glob.glob")
        return 1
    if not a.ok:
        print("(the exists answer was refused too: unexpected)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
