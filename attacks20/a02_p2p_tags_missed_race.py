"""Promise 4 (a wrong program's race is reported): send/recv messages pair by tag, not by position.

Rank 0 sends tag=1 (before writing f.txt), then writes, then sends tag=2. Rank 1 posts irecv(tag=2) first, then
recv(tag=1), reads the file, and only then waits for the tag=2 message. Only the tag=1 message, sent BEFORE the
write, orders the read: a real race (the sleep only makes it come out right). barrierlab pairs rank 0's second
send (after the write) with rank 1's second recv (the tag=1 one, before the read) and calls the read ordered."""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def handoff(folder):
    path = os.path.join(folder, "f.txt")
    x = torch.zeros(1)
    if dist.get_rank() == 0:
        dist.send(x, dst=1, tag=1)
        time.sleep(0.2)
        with open(path, "w") as f:
            f.write("x")
        dist.isend(x, dst=1, tag=2).wait()
        return None
    late = dist.irecv(x, src=0, tag=2)
    dist.recv(x, src=0, tag=1)  # rank 0 had not written yet when it sent this
    time.sleep(0.5)  # timing alone makes the file be there
    with open(path) as f:
        value = f.read()
    late.wait()  # the message sent after the write is waited for only now
    return value


def main():
    folder = tempfile.mkdtemp()
    try:
        run = bl.run(handoff, world_size=2, args=(folder,), timeout=10, live=False)
        races = run.races()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if [r.status for r in run.ranks] != ["finished", "finished"]:
        print("the program itself did not finish:", run)
        return 1
    if not races:
        print("BROKEN: rank 1's read of f.txt is ordered only by a message sent before rank 0 wrote it,")
        print("and run.races() reports nothing (sends and receives paired by position, not by tag)")
        return 1
    print("held:", races[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
