"""Promise 4 (no false race on correct code): rank 0 writes f.txt in a worker thread, waits for that work to
be done with a standard-library call, then every rank makes a barrier and rank 1 reads the file.

Each program below is correct: the wait returns only after the worker wrote and closed the file, and the
barrier orders rank 1's read after it. run.races() reports a race for: concurrent.futures.wait([fut]),
concurrent.futures.as_completed([fut]), multiprocessing.pool.ThreadPool.apply, queue.Queue.join() (task_done)
and threading.Condition.wait_for. (fut.result(), fut.exception(), executor.map, `with ThreadPoolExecutor()`,
threading.Event and Thread.join are modelled and give none.) The ordering model links a thread's lane back
to the rank only through Thread.join, Future.result(), a learner's Event.set/wait and Queue.put/get
(ordering.Order._lanes)."""

import concurrent.futures as cf
import os
import queue
import shutil
import sys
import tempfile
import threading
import time

import torch.distributed as dist

import barrierlab as bl


def _write(path):
    time.sleep(0.05)
    with open(path, "w") as f:
        f.write("x")


def _in_a_thread(path, how):
    if how == "concurrent.futures.wait":
        fut = cf.ThreadPoolExecutor(1).submit(_write, path)
        cf.wait([fut])
    elif how == "concurrent.futures.as_completed":
        fut = cf.ThreadPoolExecutor(1).submit(_write, path)
        for _ in cf.as_completed([fut]):
            pass
    elif how == "ThreadPool.apply":
        from multiprocessing.pool import ThreadPool

        with ThreadPool(1) as pool:
            pool.apply(_write, (path,))
    elif how == "Queue.join":
        work = queue.Queue()

        def worker():
            while True:
                item = work.get()
                _write(item)
                work.task_done()

        threading.Thread(target=worker, daemon=True).start()
        work.put(path)
        work.join()
    elif how == "Condition.wait_for":
        cond, done = threading.Condition(), []

        def worker():
            _write(path)
            with cond:
                done.append(True)
                cond.notify_all()

        threading.Thread(target=worker, daemon=True).start()
        with cond:
            cond.wait_for(lambda: done)


def handoff(folder, how):
    path = os.path.join(folder, "f.txt")
    if dist.get_rank() == 0:
        _in_a_thread(path, how)  # returns once the worker has written and closed the file
    dist.barrier()
    if dist.get_rank() == 1:
        with open(path) as f:
            return f.read()
    return None


HOWS = (
    "concurrent.futures.wait",
    "concurrent.futures.as_completed",
    "ThreadPool.apply",
    "Queue.join",
    "Condition.wait_for",
)


def main():
    false_races = []
    for how in HOWS:
        folder = tempfile.mkdtemp()
        try:
            run = bl.run(handoff, world_size=2, args=(folder, how), timeout=10, live=False)
            races = run.races()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if [r.status for r in run.ranks] != ["finished", "finished"]:
            print(how, ": the program did not finish:", run)
            return 1
        print(f"{how}: {len(races)} race(s)")
        if races:
            false_races.append(how)
            print("   ", str(races[0])[:240])
    if false_races:
        print("BROKEN: false races on correct code for", ", ".join(false_races))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
