"""Promise 4: no false race on correct code.

Rank 0 hands the writing of a file to a thread (or a forked child) and waits until it is done through a
threading.Event, a queue.Queue, or a multiprocessing Queue, then calls dist.barrier(); rank 1 reads the file after
the barrier. The write is ordered before the read (write -> Event.set -> Event.wait -> barrier -> read), and the
read always sees it. run.races() reports each as a race "it came first by timing alone".
"""

import os
import queue
import shutil
import sys
import tempfile
import threading

import torch.distributed as dist

import barrierlab as bl


def with_event(d):
    p = os.path.join(d, "ev.txt")
    if dist.get_rank() == 0:
        done = threading.Event()

        def saver():
            with open(p, "w") as f:
                f.write("x")
            done.set()

        threading.Thread(target=saver).start()
        done.wait()
    dist.barrier()
    with open(p) as f:
        return f.read()


def with_queue(d):
    p = os.path.join(d, "q.txt")
    if dist.get_rank() == 0:
        q = queue.Queue()

        def saver():
            with open(p, "w") as f:
                f.write("x")
            q.put("done")

        threading.Thread(target=saver, daemon=True).start()
        q.get()
    dist.barrier()
    with open(p) as f:
        return f.read()


def with_mp_queue(d):
    import multiprocessing as mp

    p = os.path.join(d, "m.txt")
    if dist.get_rank() == 0:
        ctx = mp.get_context("fork")
        q = ctx.Queue()

        def child():
            with open(p, "w") as f:
                f.write("x")
            q.put(1)

        proc = ctx.Process(target=child)
        proc.start()
        q.get()
    dist.barrier()
    with open(p) as f:
        return f.read()


if __name__ == "__main__":
    d = tempfile.mkdtemp(prefix="a13-")
    broken = []
    try:
        for fn in (with_event, with_queue, with_mp_queue):
            run = bl.run(fn, world_size=2, args=(d,), live=False)
            races = run.races()
            print(fn.__name__, run.values, f"{len(races)} race(s)")
            if run.values != ["x", "x"]:
                print("  unexpected values", run)
            elif races:
                broken.append(fn.__name__)
                print("  ", str(races[0])[:400])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if broken:
        print("BROKEN: false races on correct code:", broken)
        sys.exit(1)
    print("held")
