"""Checks for notebook 00 (what a barrier is), and the helpers notebooks 00-02 share.

The exercise: each rank writes a ``ready<rank>`` file (a ``write`` span), then counts the files (a ``count``
span). The check does not stop at "every rank counted 4": a ``time.sleep`` gets that too, on a lucky run.
It asks the ordering model (:mod:`barrierlab.ordering`, on gloo) whether every rank's write is ordered before
every rank's count by what the run recorded: a barrier, a blocking all_reduce / all_gather, an async call
and its ``work.wait()`` (or its future's ``wait()``, ``torch.futures.wait_all``, a ``then()`` chain), store
keys set after the write and waited for before the count, send/recv. A sleep, a broadcast (its root may
leave while a rank further down the tree is still absent), an ``async_op=True`` call never waited for, or a
barrier in the wrong place orders nothing, and the check names the pair of accesses that nothing ordered. The delays are random and change between the check's two runs (a different
rank is late each time), so no fixed sleep is safe.
"""

from __future__ import annotations

import random
import shutil
import tempfile

import barrierlab as bl
from barrierlab import ordering
from barrierlab.events import Event
from barrierlab.exercises import PrintedVerdict, Verdict, call_words, check_arguments, race_words, unordered
from barrierlab.result import Run

__all__ = [
    "TIMEOUT",
    "Verdict",
    "check_everyone_ready",
    "not_ordered",
    "random_delays",
    "spans",
    "verdict",
    "work_end",
    "work_start",
]

WORLD = 4
TIMEOUT = 2.0  # seconds: a rank that waits for a peer that never comes fails quickly


def verdict(ok: bool, message: str, quiet: bool = False) -> PrintedVerdict:
    line = ("✓ " if ok else "✗ not yet: ") + message
    if not quiet:
        print(line)
    return PrintedVerdict(ok, line)


def spans(run: Run, name: str) -> dict[int, list[Event]]:
    """Each rank's spans called ``name`` (ranks without one are left out)."""
    found: dict[int, list[Event]] = {}
    for r in run:
        mine = [e for e in r.events if e.name == name and e.kind not in ordering._ORDERED_KINDS and e.end is not None]
        if mine:
            found[r.rank] = mine
    return found


def _accesses_in(run: Run, rank: int, span: Event) -> list[Event]:
    return [
        e
        for e in run[rank].events
        if e.kind == "file" and span.start <= e.start and (span.end is None or e.start <= span.end)
    ]


def work_start(run: Run, rank: int, span: Event) -> float:
    """When the work of ``span`` on ``rank`` began: its first file access, else the span's start. A barrier the
    learner put inside the span, before that access, orders it too (review15a: the check measured from the
    span's start and called such a barrier's order timing)."""
    return min((e.start for e in _accesses_in(run, rank, span)), default=span.start)


def work_end(run: Run, rank: int, span: Event) -> float:
    """When the work of ``span`` on ``rank`` ended: its last file access, else the span's end (a barrier inside
    the span, after that access, orders it too)."""
    ends = [e.end if e.end is not None else e.start for e in _accesses_in(run, rank, span)]
    return max(ends, default=span.end)


def not_ordered(run: Run, folder: str, before: dict[int, float], after: dict[int, float]) -> str | None:
    """None if the model orders what every rank in ``before`` did up to its time before what every rank in
    ``after`` does from its time on, and no two accesses of the exercise's files race; else, in words, one pair
    nothing orders (the files' race if recorded)."""
    order = ordering.order(run)
    for source, t_source in before.items():
        for target, t_target in after.items():
            if order.ordered_at(source, t_source, target, t_target):
                continue
            races = unordered(run, folder)
            mine = [r for r in races if {r.first.rank, r.second.rank} == {source, target}]
            if mine or races:
                return race_words((mine or races)[0]) + _unwaited(run, target, t_target)
            return (
                f"nothing orders rank {source}'s work up to t={t_source:.3f} s before rank {target}'s from "
                f"t={t_target:.3f} s on: the order came from timing" + _unwaited(run, target, t_target)
            )
    races = unordered(run, folder)  # the spans ordered, but a file access moved out of them may not be (attack15 a02)
    if races:
        return race_words(races[0])
    return None


def _unwaited(run: Run, rank: int, before: float) -> str:
    """A hint about an ``async_op=True`` call on ``rank`` never waited for before ``before``."""
    for e in ordering.unwaited(run[rank].events, before):
        return (
            f" (rank {rank}'s {e.name}(async_op=True) at line {e.line} was never waited on before that: "
            "it orders nothing until work.wait())"
        )
    return ""


def random_delays(late: int, world: int = WORLD, rng: random.Random | None = None) -> list[float]:
    """Start-up delays: every rank 0-0.15 s, ``late`` 0.35-0.55 s, so its write comes clearly last."""
    rng = rng or random.Random()
    delays = [round(rng.uniform(0.0, 0.15), 3) for _ in range(world)]
    delays[late] = round(rng.uniform(0.35, 0.55), 3)
    return delays


def check_everyone_ready(fn, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, delays)`` twice on 4 ranks (a different rank late each time) and decide from the
    ordering model whether every rank's count was ordered after every rank's write."""
    check_arguments(fn=fn, seed=seed, quiet=quiet)
    rng = random.Random(seed)
    lates = rng.sample(range(WORLD), 2)
    for late in lates:
        delays = random_delays(late, rng=rng)
        folder = tempfile.mkdtemp(prefix="barrierlab-ready-")
        try:
            run = bl.run(fn, WORLD, args=(folder, delays), timeout=TIMEOUT)
            ok, message = _judge_ready(run, late, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # each check made its own: none is left in the temp folder
        if not ok:
            return verdict(False, message, quiet)
    return verdict(True, message, quiet)


def _judge_ready(run: Run, late: int, folder: str) -> tuple[bool, str]:
    if not run.ok:
        return False, f"the run did not finish: {run.diagnosis.headline}"
    writes, counts = spans(run, "write"), spans(run, "count")
    missing = [r for r in range(run.world_size) if r not in writes or r not in counts]
    if missing:
        return False, (
            f"rank {missing[0]} has no 'write' or 'count' span: keep both `with bl.span(...)` blocks "
            "(the check reads them) and let every rank write its file"
        )
    if run.values != [run.world_size] * run.world_size:
        return False, f"the ranks counted {run.values} ready files; every rank should count {run.world_size}"
    ranks = [late] + [r for r in range(run.world_size) if r != late]  # the late rank's write first
    problem = not_ordered(
        run,
        folder,
        {r: work_end(run, r, writes[r][-1]) for r in ranks},
        {r: work_start(run, r, counts[r][0]) for r in range(run.world_size)},
    )
    if problem:
        return False, f"every rank counted {run.world_size} this time, but {problem}"
    used = sorted(
        {
            call_words(e)
            for r in run
            for e in r.events
            if e.kind in ("collective", "p2p", "store", "wait") and writes[r.rank][-1].end <= e.start
            and e.start <= counts[r.rank][0].start
        }
    )
    return True, (
        f"every rank counted {run.world_size}, and the record shows why: {', '.join(used) or 'what the ranks did'} "
        "ordered every rank's write before every rank's count"
    )
