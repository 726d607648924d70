"""Cost of recording: microseconds per recorded event, inside a real rank.

    python benchmarks/record.py [--clock cpu|wall] [--rounds 10] [--calls 2000]

A 1-rank gloo group makes dist.barrier() cheap, so the difference between recording on and off is the
recorder's own cost. Each workload is timed in rounds of ``--calls`` calls; the table shows the fastest round.
``cpu`` (the default) times with ``time.process_time()``: CPU seconds of the whole rank, every thread included
(the helper thread that writes pending lines too), which the other processes of a loaded machine inflate far
less than wall time; ``wall`` times with ``time.perf_counter()``.

Three columns, all in the same rank:

- *no hook*: the rounds before recording first starts. The file audit hook is not installed yet.
- *recording on*, and *recording off*: rounds that alternate (the machine's noise hits both). Once recording
  has started, the audit hook stays installed for the life of the process, so "off" carries it, inert.

The rows below the rule are what a rank doing no file I/O meets: the open of a file the hook ignores (a module
of the standard library, as every import opens), code compiled and run (``exec``: two audit events),
``sys._getframe`` (one audit event) and ``os.stat`` (no audit event: the control). Their *cost* column is
recording on minus no hook: what the hook costs a rank that hands no file over.

The measuring rank runs in an interpreter of its own (a 1-rank gloo group over a FileStore), not in a
``bl.run`` rank: those are forked from the warm process, which has the hook installed already.

Copying torch's flight recorder happens once, when recording stops (or when the rank's main thread stalls for
a second): its cost is printed below the table.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab import record

#: Depths of the learner's call chains in the deep rows: helpers (a framework's hooks) and recursion.
DEEP = 12
RECURSIVE = 200


def measure(rounds: int, calls: int, clock_name: str) -> dict:
    clock = time.process_time if clock_name == "cpu" else time.perf_counter

    def per_call(fn) -> float:
        start = clock()
        for _ in range(calls):
            fn()
        return (clock() - start) / calls * 1e6

    def span_once():
        with bl.span("x"):
            pass

    tensor = torch.zeros(4, 4)

    def all_reduce_once():
        dist.all_reduce(tensor)

    def barrier_once():  # looks dist.barrier up at each call: the recorder replaces it while it records
        dist.barrier()

    def nested(depth: int) -> None:  # a call chain of the learner's own frames, as helpers and recursion make
        if depth:
            nested(depth - 1)
        else:
            dist.barrier()

    def barrier_deep():
        nested(DEEP)

    def barrier_recursive():
        nested(RECURSIVE)

    data = os.path.join(tempfile.mkdtemp(), "data.txt")
    with open(data, "w") as f:
        f.write("x")

    def open_once():  # one recorded file event (the audit hook's "open") when recording is on
        os.close(os.open(data, os.O_RDONLY))

    module_file = os.__file__

    def open_module_once():  # an "open" audit event for a path the hook ignores
        os.close(os.open(module_file, os.O_RDONLY))

    code = compile("x = 1", "<benchmark>", "exec")
    namespace: dict = {}

    def exec_once():  # "exec" audit event
        exec(code, namespace)

    def compile_once():  # "compile" audit event
        compile("1", "<benchmark>", "eval")

    def getframe_once():
        sys._getframe(0)

    def stat_once():  # not audited
        os.stat(module_file)

    recorded = (
        ("barrier", barrier_once),
        ("barrier_deep", barrier_deep),
        ("barrier_recursive", barrier_recursive),
        ("all_reduce", all_reduce_once),
        ("span", span_once),
        ("open", open_once),
    )
    ignored = (
        ("open_module", open_module_once),
        ("compile", compile_once),
        ("exec", exec_once),
        ("getframe", getframe_once),
        ("stat", stat_once),
    )
    whats = recorded + ignored
    best = {(what, mode): float("inf") for what, _ in whats for mode in ("none", "off", "on")}
    best["stop"] = float("inf")
    assert not record._audit_installed, "the audit hook is installed before the first recording"
    for _ in range(rounds):
        for what, fn in whats:
            best[what, "none"] = min(best[what, "none"], per_call(fn))
    events = os.path.join(tempfile.mkdtemp(), "rank0.events")
    for _ in range(rounds):
        for mode in ("off", "on"):
            if mode == "on":
                record.start(events, rank=0)
            for what, fn in whats:
                best[what, mode] = min(best[what, mode], per_call(fn))
            start = time.perf_counter()
            record.stop()
            if mode == "on":
                best["stop"] = min(best["stop"], time.perf_counter() - start)
    best["load"] = os.getloadavg()
    return best


LABELS = (
    ("barrier", "dist.barrier()"),
    ("barrier_deep", "dist.barrier() under {DEEP} nested calls of the learner's"),
    ("barrier_recursive", "dist.barrier() under {RECURSIVE} nested calls of the learner's (recursion)"),
    ("all_reduce", "dist.all_reduce(4×4 tensor), sizes recorded"),
    ("span", "with barrierlab.span(...)"),
    ("open", "os.open + os.close of a file (one recorded file event)"),
    (None, None),
    ("open_module", "os.open + os.close of a standard-library module (ignored)"),
    ("compile", "compile() of an expression (1 audit event)"),
    ("exec", "exec() of compiled code (1 audit event)"),
    ("getframe", "sys._getframe() (1 audit event)"),
    ("stat", "os.stat() (not audited)"),
)


def _child(options) -> None:
    """The measuring process: a fresh interpreter, so no audit hook is installed before the first recording.

    bl.run's ranks are forked from its warm process, which installed the hook when it warmed up, so the
    "no hook" column can only be measured in a process of its own: a 1-rank gloo group over a FileStore.
    """
    folder = tempfile.mkdtemp()
    store = dist.FileStore(os.path.join(folder, "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        best = measure(options.rounds, options.calls, options.clock)
    finally:
        dist.destroy_process_group()
    with open(options.child, "wb") as f:
        pickle.dump(best, f)


def _measure_in_fresh_process(options) -> dict:
    out = os.path.join(tempfile.mkdtemp(), "best.pickle")
    command = [sys.executable, os.path.abspath(__file__), "--clock", options.clock, "--rounds", str(options.rounds)]
    command += ["--calls", str(options.calls), "--child", out]
    subprocess.run(command, check=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    with open(out, "rb") as f:
        return pickle.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: the file the measuring child writes to
    options = parser.parse_args()
    if options.child:
        return _child(options)
    best = _measure_in_fresh_process(options)
    clock = "CPU µs of the rank" if options.clock == "cpu" else "wall µs"
    print(
        f"| what (1-rank group; fastest of {options.rounds} rounds × {options.calls} calls; {clock}) | no hook "
        "| recording off | recording on | cost per event |"
    )
    print("|---|---:|---:|---:|---:|")
    for what, label in LABELS:
        if what is None:
            print("| *a rank doing no file I/O* | | | | |")
            continue
        none, off, on = best[what, "none"], best[what, "off"], best[what, "on"]
        label = label.format(DEEP=DEEP, RECURSIVE=RECURSIVE)
        print(f"| {label} | {none:.2f} | {off:.2f} | {on:.2f} | {on - none:+.2f} |")
    print(
        f"\nrecord.stop() with a full flight recorder (2,000 entries, copied with their Python frames): "
        f"{best['stop'] * 1e3:.0f} ms wall (fastest of {options.rounds})"
    )
    print("load average when measured (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in best["load"]))


if __name__ == "__main__":
    main()
