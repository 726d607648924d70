"""Cost of recording: microseconds per recorded event, inside a real rank.

    python benchmarks/record.py

A 1-rank gloo group makes dist.barrier() cheap, so the difference between recording on and off is the
recorder's own cost. Rounds of 2,000 calls alternate between off and on (the machine's noise hits both);
the table shows the fastest round of each. The file audit hook stays installed once recording has started, so the
"off" rounds after the first "on" one carry it: barrier and all_reduce rows there are what a rank doing no file
I/O pays for it. Copying torch's flight recorder happens once, when recording
stops (or when the rank's main thread stalls for a second): its cost is printed below the table. ``span`` is a ``barrierlab.span`` block: with recording on it
is one recorded event; with it off it is the cost of instrumentation a rank carries when nothing records.
"""

from __future__ import annotations

import os
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab import record

CALLS, ROUNDS = 2000, 10


def per_call(fn) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - start) / CALLS * 1e6


def measure() -> dict:
    def span_once():
        with bl.span("x"):
            pass

    tensor = torch.zeros(4, 4)

    def all_reduce_once():
        dist.all_reduce(tensor)

    def barrier_once():  # looks dist.barrier up at each call: the recorder replaces it while it records
        dist.barrier()

    data = os.path.join(tempfile.mkdtemp(), "data.txt")
    with open(data, "w") as f:
        f.write("x")

    def open_once():  # one recorded file event (the audit hook's "open") when recording is on
        os.close(os.open(data, os.O_RDONLY))

    events = os.path.join(tempfile.mkdtemp(), "rank0.events")
    whats = (("barrier", barrier_once), ("all_reduce", all_reduce_once), ("span", span_once), ("open", open_once))
    best = {(what, mode): float("inf") for what, _ in whats for mode in ("off", "on")}
    best["stop"] = float("inf")
    for _ in range(ROUNDS):
        for mode in ("off", "on"):
            if mode == "on":
                record.start(events, rank=0)
            for what, fn in whats:
                best[what, mode] = min(best[what, mode], per_call(fn))
            start = time.perf_counter()
            record.stop()
            if mode == "on":
                best["stop"] = min(best["stop"], time.perf_counter() - start)
    return best


def main() -> None:
    best = bl.run(measure, 1, record=False, deadline=120).raise_if_failed().values[0]
    print(
        f"| what (1-rank group; fastest of {ROUNDS} rounds × {CALLS} calls) | recording off (µs) "
        "| recording on (µs) | cost per event (µs) |"
    )
    print("|---|---:|---:|---:|")
    for what, label in (
        ("barrier", "dist.barrier()"),
        ("all_reduce", "dist.all_reduce(4×4 tensor), sizes recorded"),
        ("span", "with barrierlab.span(...)"),
        ("open", "os.open + os.close of a file (one file event)"),
    ):
        off, on = best[what, "off"], best[what, "on"]
        print(f"| {label} | {off:.1f} | {on:.1f} | {on - off:.1f} |")
    print(
        f"\nrecord.stop() with a full flight recorder (2,000 entries, copied with their Python frames): "
        f"{best['stop'] * 1e3:.0f} ms (fastest of {ROUNDS})"
    )


if __name__ == "__main__":
    main()
