"""a15: notebook 01's check (check_vocab) on a correct answer: the solution's barrier after rank 0's build, and
every rank reads the vocabulary inside a `with open(...)` block that also holds a second barrier ("everyone has
read it before anyone goes on"). Rank 0's write was closed before the first barrier; every read is after it.
Promise 1 (through the exercise check that uses the ordering model): no false race on a correct program.
Exits 0 if the promise holds (the check passes the answer), 1 if it breaks."""

import os
import sys
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab


def build_vocab_then_read(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    dist.barrier()  # after rank 0's write, before anyone reads
    with open(path) as f:
        with bl.span("read", kind="io"):
            words = f.read().split()
        dist.barrier()  # every rank has read it before anyone goes on
    return words


def main() -> int:
    verdict = check_vocab(build_vocab_then_read, quiet=True, seed=1)
    print(verdict)
    if not verdict.ok:
        print("BROKEN: the check refuses a correct answer")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
