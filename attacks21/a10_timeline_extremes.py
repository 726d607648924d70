"""Timelines, waits, ledgers and reprs with extreme inputs: a run with no events, 3,000 barriers, 16 ranks, span
names with newlines, markup and 5,000 characters, and a run's events edited to an hour-long barrier and a
nanosecond span. Promise (plot.timeline's docstring, docs/reference.md): any run draws (one lane per rank, at
most 64), and the numbers and ledger come out. Held if everything draws/prints without an exception within
30 s each."""

import dataclasses
import time

import _common  # noqa: F401
import torch.distributed as dist

import barrierlab as bl
from barrierlab.plot import compare_timelines, timeline


def nothing():
    return 1


def many(n):
    for _ in range(n):
        dist.barrier()
    return n


def odd_names():
    with bl.span("line1\nline2\n" + "x" * 5000):
        time.sleep(0.01)
    with bl.span("<b>bold</b> & \\textbf{x} %s {0} $$ $x$"):
        time.sleep(0.01)
    dist.barrier()
    return dist.get_rank()


runs = {
    "no events": bl.run(nothing, 2),
    "3000 barriers": bl.run(many, 2, args=(3000,), timeout=60, deadline=100),
    "16 ranks": bl.run(many, 16, args=(20,), timeout=20, deadline=60),
    "odd span names": bl.run(odd_names, 4),
}
base = runs["odd span names"]
edited = []
for r in base:
    events = []
    for e in r.events:
        if e.kind == "collective":
            e = dataclasses.replace(e, end=e.start + 3600.0)
        elif e.end is not None:
            e = dataclasses.replace(e, end=e.start + 1e-9)
        events.append(e)
    edited.append(events)

problems = []
for name, run in runs.items():
    for what, draw in (
        ("timeline png", lambda run=run: timeline(run)._repr_png_()),
        ("handoffs png", lambda run=run: timeline(run, handoffs=True)._repr_png_()),
        ("waits", lambda run=run: run.waits()),
        ("ledger", lambda run=run: run.ledger()),
        ("repr", lambda run=run: repr(run)),
        (
            "compare",
            lambda run=run: compare_timelines({"a\n$x$ <i>": run, "b": run}).savefig("/dev/null", format="png"),
        ),
    ):
        t = time.time()
        try:
            draw()
            took = time.time() - t
            print(f"ok  {name}: {what} {took:.2f} s", flush=True)
            if took > 30:
                problems.append(f"{name} {what} {took:.0f} s")
        except Exception as exc:  # noqa: BLE001
            print(f"BAD {name}: {what}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            problems.append(f"{name} {what}")
t = time.time()
try:
    timeline(edited)._repr_png_()
    print(f"ok  hour-long barrier / nanosecond spans: {time.time() - t:.2f} s")
except Exception as exc:  # noqa: BLE001
    print(f"BAD hour-long barrier / nanosecond spans: {type(exc).__name__}: {str(exc)[:200]}")
    problems.append("edited events")
_common.finish(bool(problems), f"failed: {problems}" if problems else "every extreme input drew")
