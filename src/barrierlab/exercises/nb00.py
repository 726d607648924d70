"""Checks for notebook 00 (what a barrier is), and the ordering test notebooks 00-02 share.

The exercise: each rank writes a ``ready<rank>`` file (a ``write`` span), then counts the files (a ``count``
span). The check does not stop at "every rank counted 4": a ``time.sleep`` gets that too, on a lucky run.
It asks the record whether something *guaranteed* the order: a collective that every rank entered after
its own write and left only after the last rank had entered it, before its own count. A barrier, or a
blocking all_reduce / all_gather, is such a collective; a sleep, a broadcast (its root may leave while a rank
further down the tree is still absent), an ``async_op=True`` call never waited for, or a barrier in the wrong
place is not. The delays are random and change between the check's two runs (a different rank is late each
time), so no fixed sleep is safe.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass

import barrierlab as bl
from barrierlab.events import Event
from barrierlab.exercises import PrintedVerdict, Verdict  # noqa: F401  (Verdict: the type nb01, nb02 name)
from barrierlab.result import Run

WORLD = 4
TIMEOUT = 2.0  # seconds: a rank that waits for a peer that never comes fails quickly




def verdict(ok: bool, message: str, quiet: bool = False) -> PrintedVerdict:
    line = ("✓ " if ok else "✗ not yet: ") + message
    if not quiet:
        print(line)
    return PrintedVerdict(ok, line)


# --- what the record says about order -----------------------------------------------------------------

def spans(run: Run, name: str) -> dict[int, list[Event]]:
    """Each rank's spans called ``name`` (ranks without one are left out)."""
    found: dict[int, list[Event]] = {}
    for r in run:
        mine = [e for e in r.events if e.name == name and not e.is_collective and e.kind != "p2p"]
        if mine:
            found[r.rank] = mine
    return found


def completion(events: list[Event], call: Event, before: float) -> float | None:
    """When the rank had the collective's result in hand, as far as the record shows; None if it does not.

    A blocking call: when it returned. An ``async_op=True`` call returns at once, so the record must show
    the rank waiting for it: a ``wait`` span (``with bl.span("wait", kind="wait"): work.wait()``) after the
    call that ended once the work had completed and before ``before``. (The recorder keeps torch's own
    ``Work`` untouched, so a bare ``work.wait()`` leaves no trace.)
    """
    if call.end is None:
        return None
    if not getattr(call, "is_async", False):
        return call.end
    done = getattr(call, "done", None)
    if done is None:
        return None
    waits = [e.end for e in events if e.kind == "wait" and e.end is not None and e.start >= call.start
             and done <= e.end <= before]
    return min(waits) if waits else None


@dataclass(frozen=True)
class Link:
    """Collective number ``seq`` (``op``) carried ``source``'s earlier work to ``target`` before ``target``
    went on: ``source`` entered it after that work, and ``target`` got out of it only after that entry."""

    seq: int
    op: str


def links(run: Run, source: int, after: float, target: int, before: float) -> tuple[list[Link], list[str]]:
    """Collectives that order ``source``'s work ending at ``after`` before ``target``'s work at ``before``.

    Returns the links found, and for collectives that sat in the right place on both ranks but did not
    make ``target`` wait for ``source`` (a broadcast whose root left first, ``async_op=True`` without
    ``wait()``), one sentence each saying so.
    """
    src = {e.seq: e for e in run[source].events if e.is_collective and e.seq}
    dst = {e.seq: e for e in run[target].events if e.is_collective and e.seq}
    found, near = [], []
    for seq in sorted(set(src) & set(dst)):
        entered, call = src[seq], dst[seq]
        if entered.name != call.name or entered.start < after or call.start > before:
            continue
        done = completion(run[target].events, call, before)
        if done is None and getattr(call, "is_async", False):
            near.append(f"rank {target} issued {call.name} #{seq} with async_op=True, which returns before the "
                        "others arrive, and the record shows no wait on it before going on (call work.wait() "
                        "inside `with bl.span(\"wait\", kind=\"wait\"):` so the check can see it)")
            continue
        if done is None or done > before:
            continue
        if done >= entered.start:
            found.append(Link(seq, call.name))
        else:
            near.append(f"rank {target} left {call.name} #{seq} {entered.start - done:.2f} s before rank "
                        f"{source} entered it, so it did not wait for rank {source}")
    return found, near


# --- the exercise ----------------------------------------------------------------------------------------

def random_delays(late: int, world: int = WORLD, rng: random.Random | None = None) -> list[float]:
    """Start-up delays: every rank 0-0.15 s, ``late`` 0.35-0.55 s, so its write comes clearly last."""
    rng = rng or random.Random()
    delays = [round(rng.uniform(0.0, 0.15), 3) for _ in range(world)]
    delays[late] = round(rng.uniform(0.35, 0.55), 3)
    return delays


def check_everyone_ready(fn, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, delays)`` twice on 4 ranks (a different rank late each time) and decide from the
    record whether every rank's count was ordered after every rank's write by a collective."""
    rng = random.Random(seed)
    lates = rng.sample(range(WORLD), 2)
    for late in lates:
        delays = random_delays(late, rng=rng)
        run = bl.run(fn, WORLD, args=(tempfile.mkdtemp(prefix="barrierlab-ready-"), delays), timeout=TIMEOUT)
        result = _judge_ready(run, late)
        if not result[0]:
            return verdict(False, result[1], quiet)
    return verdict(True, result[1], quiet)


def _judge_ready(run: Run, late: int) -> tuple[bool, str]:
    if not run.ok:
        return False, f"the run did not finish: {run.diagnosis.headline}"
    writes, counts = spans(run, "write"), spans(run, "count")
    missing = [r for r in range(run.world_size) if r not in writes or r not in counts]
    if missing:
        return False, (f"rank {missing[0]} has no 'write' or 'count' span: keep both `with bl.span(...)` blocks "
                       "(the check reads them) and let every rank write its file")
    if run.values != [run.world_size] * run.world_size:
        return False, f"the ranks counted {run.values} ready files; every rank should count {run.world_size}"
    problems = []
    for target in range(run.world_size):
        found, near = links(run, late, writes[late][-1].end, target, counts[target][0].start)
        if not found:
            problems.append((target, near))
    if problems:
        target, near = problems[0]
        if near:
            return False, f"every rank counted {run.world_size}, but {near[0]}: its count was ordered by luck"
        return False, (f"every rank counted {run.world_size} this time, but nothing made rank {target} wait for "
                       f"rank {late}'s write (rank {late} was the late one): the order came from timing. A sleep "
                       "only makes the race rarer; put a call that every rank reaches between the write and "
                       "the count")
    used = sorted({e.name for r in run for e in r.events if e.is_collective})
    return True, (f"every rank counted {run.world_size}, and the record shows why: no rank left "
                  f"{' / '.join(used)} before the last rank had written its file and entered it")
