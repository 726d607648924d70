"""What the live view costs a launch: 4 ranks to a first barrier with the view on and off, paired and interleaved.

    python benchmarks/live.py [--pairs 60] [--world-size 4]

"On" forces the terminal view (``live=True``; its status line goes to a pipe here, so nothing is drawn on
screen, but its thread starts and reads the ranks' files exactly as in a notebook). A launch that ends before
the view's first refresh (0.4 s) draws nothing, so the figure is the cost of starting and stopping the view.
Prints the medians and the median of the per-pair ratios (target: <= 1.05).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch.distributed as dist

import barrierlab as bl


def first_barrier() -> None:
    dist.barrier()


def timed(world_size: int, live: bool) -> float:
    start = time.perf_counter()
    run = bl.run(first_barrier, world_size, live=live)
    elapsed = time.perf_counter() - start
    if not run.ok:
        raise SystemExit(f"a benchmark run failed: {run!r}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()
    bl.warm_up(wait=True)
    for _ in range(5):
        timed(args.world_size, False)
    on, off, ratios = [], [], []
    for i in range(args.pairs):
        order = (True, False) if i % 2 else (False, True)
        times = {live: timed(args.world_size, live) for live in order}
        on.append(times[True])
        off.append(times[False])
        ratios.append(times[True] / times[False])
    print(f"| {args.world_size} ranks to a first barrier ({args.pairs} pairs) | median (s) |")
    print("|---|---:|")
    print(f"| live view off | {statistics.median(off):.4f} |")
    print(f"| live view on | {statistics.median(on):.4f} |")
    print(f"| median ratio on/off | {statistics.median(ratios):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
