"""Promise 4: another ordering primitive is accepted; no false race on correct code.

Notebook 07's exercise (one writer of results.csv, no barriers), answered with point-to-point messages: rank 0
tells each rank the file exists (send/recv), each rank appends its line and then sends to rank 0, and rank 0
receives ws-1 messages from whichever rank is done first before it reads the file. With dist.recv(t) (any
source) the check accepts it; with dist.irecv(t) (any source) followed by work.wait() -- the same wait -- the
check refuses it and run.races() reports the read as a race: the recorder keeps no source for an irecv
without src, so the model pairs it with no send.
Exits 0 when both are accepted, 1 when the irecv answer is refused.
"""

import os
import sys
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.exercises.nb07 import check_results
from barrierlab.scenarios import race_results_file


def answer(workdir="", seed=0, use_irecv=False):
    rank, ws = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_time, evaluate_time = race_results_file.delays(seed, rank)
    with span("1 setup"):
        time.sleep(setup_time)
        if rank == 0:
            with open(path, "w") as f:
                f.write(race_results_file.HEADER + "\n")
            for i in range(1, ws):
                dist.send(torch.zeros(1), i)  # the file exists
        else:
            dist.recv(torch.zeros(1), 0)
    with span("2 evaluate"):
        time.sleep(evaluate_time)
        accuracy = round(0.9 + rank / 100, 2)
        with open(path, "a") as f:
            f.write(f"{rank},{accuracy}\n")
    if rank != 0:
        dist.send(torch.tensor([float(rank)]), 0)  # my line is in
        return accuracy
    for _ in range(ws - 1):  # from whichever rank is done first
        if use_irecv:
            dist.irecv(torch.zeros(1)).wait()
        else:
            dist.recv(torch.zeros(1))
    with span("3 report", "io"):
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {ws} results"


def with_recv(workdir="", seed=0):
    return answer(workdir, seed, use_irecv=False)


def with_irecv(workdir="", seed=0):
    return answer(workdir, seed, use_irecv=True)


def main() -> int:
    a = check_results(with_recv, seeds=(1, 2))
    b = check_results(with_irecv, seeds=(1, 2))
    print("recv(any source): ", a)
    print("irecv(any source):", b)
    if a.ok and not b.ok:
        print("BROKEN: the same any-source wait is accepted with recv and refused with irecv().wait()")
        return 1
    return 0 if b.ok else 1


if __name__ == "__main__":
    sys.exit(main())
