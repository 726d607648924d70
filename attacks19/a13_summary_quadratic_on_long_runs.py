"""a13 (performance, not one of the six promises): run.summary() / run.waits() / run.timeline() of a run of
3,000 all_reduces on 4 ranks take about 13 s each on 2 cores, twice as long as the run itself.

waits._arrival_counts walks every event of every lane for every release (releases x events: ~1,500 x 10,000
here); timeline() measures the same numbers. The check: summary() within 5 s.
"""

import sys
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def many(n):
    t = torch.ones(1)
    for _ in range(n):
        dist.all_reduce(t)


started = time.monotonic()
run = bl.run(many, 4, args=(3000,), timeout=10, deadline=120)
ran = time.monotonic() - started
started = time.monotonic()
line = run.summary()
took = time.monotonic() - started
print(f"the run: {ran:.1f} s; run.summary(): {took:.1f} s")
print(line)
if took > 5.0:
    print("BROKEN (performance): run.summary() took longer than the run; quadratic in _arrival_counts")
    sys.exit(1)
print("held")
