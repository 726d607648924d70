"""a07: a modest racy run -- 8 ranks each appending to and reading one shared log file 300 times (600 events a
rank, no record cut) -- makes run.diagnosis and run.races() take minutes and list millions of races. The check:
each must finish within 15 s (it is killed then).
Promise: diagnosis and run.races() stay fast and bounded on a modest run (a call over ~10 s is a finding).
Exits 0 if the promise holds, 1 if it breaks."""

import multiprocessing
import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl

LIMIT = 15.0


def log_everything(folder, n):
    path = os.path.join(folder, "log.txt")
    for i in range(n):
        with open(path, "a") as f:
            f.write(f"{dist.get_rank()} {i}\n")
        with open(path) as f:
            f.read()
    return dist.get_rank()


def _time(what, conn, folder):
    try:
        run = bl.run(log_everything, 8, args=(folder, 300), timeout=30, deadline=120, live=False)
        conn.send(
            ("run", run.ok, sum(len(r.events) for r in run), {r: d.events for r, d in run.events_dropped.items()})
        )
        t = time.monotonic()
        if what == "diagnosis":
            out = run.diagnosis.headline[:160]
        else:
            out = f"{len(run.races())} races"
        conn.send((what, time.monotonic() - t, out))
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # when the child is killed, main() removes it


def main() -> int:
    broken = []
    ctx = multiprocessing.get_context("fork")
    for what in ("diagnosis", "races"):
        here, there = ctx.Pipe()
        folder = tempfile.mkdtemp(prefix="a07-")
        p = ctx.Process(target=_time, args=(what, there, folder))
        p.start()
        info = here.recv() if here.poll(150) else None
        print("run:", info)
        got = here.recv() if here.poll(LIMIT) else None
        if got is None:
            print(f"{what}: not done after {LIMIT:.0f} s; killing the measuring process")
            broken.append(f"run.{what} took over {LIMIT:.0f} s")
            p.kill()
        else:
            print(f"{what}: {got[1]:.1f} s: {got[2]}")
            if got[1] > LIMIT:
                broken.append(f"run.{what} took {got[1]:.1f} s")
        p.join(30)
        shutil.rmtree(folder, ignore_errors=True)
        time.sleep(2)  # the killed process's run dir is swept by barrierlab's own clean-up
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
