"""The straggler explorer at interactive speed: how long a redraw takes, and how noisy a sleep-based step is.

    python benchmarks/explorer.py [--repeat 10] [--jitter-steps 60] [--skip-jitter] [--skip-redraw]

Run it on one CPU (the Binder case) with ``taskset -c 0 python benchmarks/explorer.py``; the ranks inherit
the affinity.  It prints two tables:

1. **Step jitter** of the straggler loop with no straggler (delay 0, a barrier every step, 1 thread per
   rank): for each rank and step, the time from one barrier release to the next minus the requested sleep
   (``excess``: sleep overshoot + the barrier + scheduling), and how far a step's length strays from the
   median step (``spread``, the step jitter: the barrier's typical cost is in the cost model, its variation
   is not).  The explorer's default delay is compared with 10x the 95th-percentile jitter.
2. **Redraw time** of :class:`barrierlab.widgets.StragglerExplorer` after a control changes, at its
   defaults and at 8 ranks: wall time of ``update()`` (ranks + figure + PNG), split into the run and the
   drawing, median and 90th percentile of ``--repeat`` redraws, the kernel's CPU seconds per redraw (what
   the drawing costs without other processes competing for the CPU), plus the cost model's prediction and
   the measured function time of the last run, so a drifting model shows up here too.  The machine's load
   average is printed with each table: on a busy machine the wall times are mostly waiting for a CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import barrierlab as bl
from barrierlab import widgets
from barrierlab.scenarios import straggler
from barrierlab.waits import function_seconds

REDRAW_TARGETS = {"defaults": 0.5, "8 ranks": 1.0}  # seconds, issue 14


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def step_jitter(world_size: int, steps: int, base_compute: float) -> dict:
    """Excess and spread (seconds) of each rank's barrier-to-barrier step in a straggler-free loop."""
    run = bl.run(
        straggler.scenario,
        world_size,
        timeout=30,
        deadline=30 + steps * (base_compute + 0.05),
        kwargs=dict(steps=steps, slow_rank=0, delay=0.0, barrier_every=1, base_compute=base_compute),
    )
    if not run.ok:
        raise RuntimeError(f"the jitter run did not finish: {run.headline()}")
    lengths: list[float] = []
    sleeps: list[float] = []
    for rank in run:
        releases = [e.end for e in rank.events if e.name == "barrier" and e.end is not None]
        lengths += [b - a for a, b in zip(releases, releases[1:])]  # step k+1: release k to release k+1
        sleeps += [e.end - e.start for e in rank.events if e.name == "compute" and e.end is not None]
    middle = statistics.median(lengths)
    return dict(
        excess=[length - base_compute for length in lengths],
        spread=[abs(length - middle) for length in lengths],
        oversleep=[s - base_compute for s in sleeps],
    )


def jitter_table(steps: int) -> float:
    """Print the jitter table; return the worst 95th-percentile spread (seconds), the step jitter."""
    print(
        f"Step jitter, delay 0, barrier every step, {steps} steps "
        f"(CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"{'ranks':>5} {'sleep':>6} {'n':>5} | {'excess p50':>10} {'p95':>7} {'max':>7} | "
        f"{'spread p95':>10} | {'oversleep p95':>13}   (ms)"
    )
    worst = {}
    for world_size in (4, 8):
        for base_compute in (0.01, 0.05):
            found = step_jitter(world_size, steps, base_compute)
            ms = {k: [1000 * v for v in values] for k, values in found.items()}
            p95 = percentile(ms["excess"], 95)
            worst[world_size] = max(worst.get(world_size, 0.0), percentile(ms["spread"], 95) / 1000)
            print(
                f"{world_size:>5} {1000 * base_compute:>4.0f}ms {len(ms['excess']):>5} | "
                f"{percentile(ms['excess'], 50):>10.2f} {p95:>7.2f} {max(ms['excess']):>7.2f} | "
                f"{percentile(ms['spread'], 95):>10.2f} | {percentile(ms['oversleep'], 95):>13.2f}"
            )
    delay = widgets.DEFAULT_DELAY
    for world_size, jitter in worst.items():
        print(
            f"{world_size} ranks: step jitter (p95 spread) {1000 * jitter:.1f} ms -> a delay >= "
            f"{10 * 1000 * jitter:.0f} ms is >= 10x it; the explorer's default delay {1000 * delay:.0f} ms is "
            f"{delay / jitter:.1f}x"
        )
    return max(worst.values())


def redraw_times(world_size: int, repeat: int) -> dict:
    """Time ``repeat`` redraws of an explorer after a control change (alternating the slow rank)."""
    explorer = widgets.straggler_explorer(world_size=world_size)
    control = explorer.controls["slow rank"]
    totals, runs, draws, cpu = [], [], [], []
    for i in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        control.value = (i + 2) % world_size if control.value == 1 else 1  # a change triggers one redraw
        totals.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        runs.append(explorer.timings["run"])
        draws.append(explorer.timings["draw"])
        if not explorer.run.ok:
            raise RuntimeError(f"a redraw's run did not finish: {explorer.run.headline()}")
    return dict(
        total=totals,
        run=runs,
        draw=draws,
        cpu=cpu,
        predicted=explorer.predicted,
        measured=function_seconds(explorer.run),
    )


def redraw_table(repeat: int) -> None:
    print(
        f"\nExplorer redraw after a control change ({repeat} redraws each; "
        f"CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"{'setting':<9} {'median':>7} {'p90':>6} {'target':>6} | {'run':>5} {'draw':>5} {'kernel CPU':>10} | "
        f"{'model':>6} {'measured':>8}   (s; run, draw, CPU are medians)"
    )
    for label, world_size in (("defaults", widgets.DEFAULT_WORLD_SIZE), ("8 ranks", 8)):
        t = redraw_times(world_size, repeat)
        median = statistics.median(t["total"])
        verdict = "ok" if median <= REDRAW_TARGETS[label] else "OVER"
        print(
            f"{label:<9} {median:>7.3f} {percentile(t['total'], 90):>6.3f} {REDRAW_TARGETS[label]:>6.1f} | "
            f"{statistics.median(t['run']):>5.3f} {statistics.median(t['draw']):>5.3f} "
            f"{statistics.median(t['cpu']):>10.3f} | "
            f"{t['predicted']:>6.3f} {t['measured']:>8.3f}   {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10, help="redraws per setting (default 10)")
    parser.add_argument("--jitter-steps", type=int, default=60, help="steps per jitter run (default 60)")
    parser.add_argument("--skip-jitter", action="store_true")
    parser.add_argument("--skip-redraw", action="store_true")
    options = parser.parse_args()
    if options.repeat < 1 or options.jitter_steps < 3:
        parser.error("--repeat must be >= 1 and --jitter-steps >= 3")
    bl.warm_up()
    bl.run(straggler.scenario, 2, kwargs=dict(steps=1, delay=0.0))  # the first launch pays the preload
    if not options.skip_jitter:
        jitter_table(options.jitter_steps)
    if not options.skip_redraw:
        redraw_table(options.repeat)


if __name__ == "__main__":
    main()
