"""The ordering model on the standard library's other ways of waiting for a thread, from real runs (attack20 a07):
``concurrent.futures.wait``/``as_completed``, a ``ThreadPool``'s ``apply``, ``Queue.join`` after ``task_done`` and
``Condition.wait_for`` after ``notify_all`` order the worker's write before the rank's barrier, so the other rank's
read after it is no race; a write the worker makes *after* its signal, or a future the wait did not see done, is
still one. The correct programs are attack20 a07's (run by tests/test_attack20.py); here, the races they must not
hide."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def signal_then_write(folder: str, how: str) -> None:
    """Rank 0's worker signals first and writes after: the wait returns before the write, which nothing orders
    before rank 1's read after the barrier."""
    import concurrent.futures as cf
    import os
    import queue
    import threading
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "f.txt")
    written = threading.Event()

    def write():
        with open(path, "w") as f:
            f.write("x")
        written.set()

    if dist.get_rank() == 0:
        if how == "Condition.wait_for":
            cond, done = threading.Condition(), []

            def worker():
                with cond:
                    done.append(True)
                    cond.notify_all()
                time.sleep(0.05)
                write()

            threading.Thread(target=worker, daemon=True).start()
            with cond:
                cond.wait_for(lambda: done)
        elif how == "Queue.join":
            work = queue.Queue()

            def worker():
                work.get()
                work.task_done()
                time.sleep(0.05)
                write()

            threading.Thread(target=worker, daemon=True).start()
            work.put(path)
            work.join()
        elif how == "concurrent.futures.wait":
            pool = cf.ThreadPoolExecutor(1)
            future = pool.submit(lambda: (time.sleep(0.05), write()))
            cf.wait([future], timeout=0)  # returns at once: the future is not done
        time.sleep(0.3)  # the write is long over before the barrier, by timing alone
    dist.barrier()
    if dist.get_rank() == 1:
        with open(path) as f:
            f.read()


@pytest.mark.parametrize("how", ["Condition.wait_for", "Queue.join", "concurrent.futures.wait"])
def test_a_write_after_the_signal_is_still_a_race(tmp_path, how):
    run = bl.run(signal_then_write, world_size=2, args=(str(tmp_path), how), timeout=10, live=False)
    assert [r.status for r in run.ranks] == ["finished", "finished"], run
    races = run.races()
    assert len(races) == 1, races
    assert "f.txt" in str(races[0]) and "thread" in str(races[0]), races[0]
