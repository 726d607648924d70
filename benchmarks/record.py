"""Cost of recording: microseconds per recorded event, inside a real rank.

    python benchmarks/record.py

A 1-rank gloo group makes dist.barrier() nearly free, so the difference between recording on and off
is the recorder's own cost. Also times barrierlab.span with recording on, and with it off (the cost a
rank pays for the instrumentation it carries when nothing records).
"""

from __future__ import annotations

import statistics
import time

import torch.distributed as dist

import barrierlab as bl

N = 5000


def per_call(fn, n: int = N) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def measure() -> dict:
    def span_once():
        with bl.span("x"):
            pass

    return {"barrier": per_call(dist.barrier), "span": per_call(span_once), "recording": bl.record.recording()}


def main() -> None:
    rows = {}
    for record in (False, True):
        samples = [bl.run(measure, 1, record=record, deadline=60).raise_if_failed().values[0] for _ in range(5)]
        rows[record] = {k: statistics.median(s[k] for s in samples) for k in ("barrier", "span")}
        assert all(s["recording"] == record for s in samples)
    print(f"| what (1-rank group, median of 5 × {N} calls) | recording off (µs) | recording on (µs) | cost per event (µs) |")
    print("|---|---:|---:|---:|")
    for what in ("barrier", "span"):
        off, on = rows[False][what], rows[True][what]
        print(f"| dist.barrier() |" if what == "barrier" else "| with barrierlab.span(...) |", end="")
        print(f" {off:.1f} | {on:.1f} | {on - off:.1f} |")


if __name__ == "__main__":
    main()
