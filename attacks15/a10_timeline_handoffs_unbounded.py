"""a10: run.timeline(handoffs=True) (and `barrierlab run ... --races --timeline`) draws one dashed line and one
text label per race, with no cap (handoffs are capped at MAX_HANDOFFS, races are not): 4 ranks appending to and
reading one log file 60 times each (480 events, ~40k races) makes the figure take well over 20 s.
Promise: plots stay fast and bounded on a modest run (a call over ~10 s is a finding).
Exits 0 if the promise holds, 1 if it breaks."""

import multiprocessing
import os
import shutil
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")


import barrierlab as bl  # noqa: E402

LIMIT = 20.0


def log_everything(folder, n):
    path = os.path.join(folder, "log.txt")
    for _ in range(n):
        with open(path, "a") as f:
            f.write("x")
        with open(path) as f:
            f.read()


def _draw(conn, folder):
    try:
        run = bl.run(log_everything, 4, args=(folder, 60), live=False)
        t = time.monotonic()
        races = len(run.races())
        conn.send(("races", races, time.monotonic() - t))
        t = time.monotonic()
        run.timeline()
        conn.send(("timeline()", time.monotonic() - t))
        t = time.monotonic()
        run.timeline(handoffs=True)
        conn.send(("timeline(handoffs=True)", time.monotonic() - t))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    folder = tempfile.mkdtemp(prefix="a10-")
    p = ctx.Process(target=_draw, args=(there, folder))
    p.start()
    broken = []
    for step in ("races", "timeline()", "timeline(handoffs=True)"):
        got = here.recv() if here.poll(LIMIT + (120 if step == "races" else 0)) else None
        if got is None:
            print(f"{step}: not done after {LIMIT:.0f} s; killing the drawing process")
            broken.append(f"{step} took over {LIMIT:.0f} s")
            break
        print(got)
        if got[-1] > LIMIT:
            broken.append(f"{step} took {got[-1]:.1f} s")
    p.kill()
    p.join(30)
    shutil.rmtree(folder, ignore_errors=True)
    time.sleep(2)
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
