"""Notebook 05's exercise check: keep only the barrier that is needed.

The job: a training loop, then every rank writes its metrics file, then rank 0 lists the folder. What
must be ordered is each rank's write before rank 0's read, and nothing else. The check asks the ordering
model (:mod:`barrierlab.ordering`, on gloo): did a rank wait for another inside the loop (a barrier or a
dummy collective per step)? Is every rank's write ordered before rank 0's read (a barrier, a blocking
all_reduce, a ``gather`` to rank 0, store keys, send/recv; not a sleep, not a broadcast from rank 0, not an
``async_op=True`` call never waited for)? Does rank 0 call anything after what already ordered the writes?
Delays are drawn at random for every check, so a ``time.sleep`` tuned to one run does not order anything.
"""

from __future__ import annotations

import random
import tempfile

import barrierlab as bl
from barrierlab import ordering
from barrierlab.exercises import Verdict, check_arguments
from barrierlab.exercises.nb00 import not_ordered, spans, work_end, work_start
from barrierlab.waits import function_seconds

_SYNC_KINDS = ("collective", "p2p", "store", "wait")
#: Training steps the check asks for, and the seconds of each (``base_compute``): every rank must spend at least
#: 80 % of what its steps take (its own delays included) inside "compute" spans.
STEPS = 4
BASE_COMPUTE = 0.05


def check(fn, world_size: int = 4, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, steps=4, delay=...)`` on ``world_size`` ranks with a random delay and judge the run."""
    check_arguments(fn=fn, world_size=world_size, seed=seed)
    rng = random.Random(seed)
    delay = round(rng.uniform(0.12, 0.25), 3)
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(fn, world_size, args=(folder,), kwargs=dict(steps=STEPS, delay=delay), timeout=3, deadline=15)
        return _judge(run, folder, world_size, delay)


def _waits(event, polled: set[int]) -> bool:
    """A call a rank can wait in for other ranks (``polled``: its rank's polls, :func:`ordering.polls`): a
    collective, a point-to-point call, a ``Work.wait()``, a store ``wait``/``get`` (it blocks until the key exists), a file lock, a counter polled with
    ``add(key, 0)`` until it is reached, a file polled for until another rank made it. A store ``add``, ``set`` or
    ``check`` alone returns at once: the order the model gives a counter's adds is no meeting (attack12 r11: a
    progress counter in the loop); a poll of them is one (attack22 a08: torch's _store_based_barrier by hand, a
    barrier of marker files)."""
    if event.kind == "store":
        return event.name in ordering.KEY_WAITS or id(event) in polled
    if event.kind == "sync":
        return event.name == "lock"  # a file lock another rank held: the rank waited for its release
    if event.kind == "file":  # the model orders a file only into a find after a miss: the end of a wait for it
        return event.name == "exists"
    return event.kind in ("collective", "p2p", "wait")


def _meetings(order, rank: int, waits: list) -> str:
    """What ``rank`` met the others in before its write: how many calls, which ones, and whom it waited for."""
    calls = {b: order.event_at(b) for _, b in waits}  # one entry per call: its release point on ``rank``
    others = sorted({a[0] for a, _ in waits})
    world = len(order.events)
    if len(others) == world - 1:
        who = "the other ranks"
    else:
        who = ("ranks " if len(others) > 1 else "rank ") + ", ".join(map(str, others))
    sites: dict[str, int] = {}
    counted: set[tuple] = set()  # a poll of one key is one wait, however many reads it took
    for b in sorted(calls):
        e = calls[b]
        if e.kind == "store":
            poll = (e.name, e.line, tuple(e.keys or ()))
            if poll in counted:
                continue
            counted.add(poll)
        site = f"{e.name} at line {e.line}"
        sites[site] = sites.get(site, 0) + 1
    where = "; ".join(f"{n} × {site}" for site, n in sites.items())
    n = sum(sites.values())
    return (
        f"rank {rank} met {who} in {n} call{'s' if n > 1 else ''} before its write ({where}), each one it could leave only "
        "after they had reached it. Waiting for other ranks before the write makes the group pay for their slow "
        "steps; nothing before the write needs it, only rank 0's read after it."
    )


def _judge(run, folder: str, world_size: int, delay: float) -> Verdict:
    if not run.ok:
        return Verdict(False, f"✗ not yet: the run failed: {run.diagnosis.headline}")
    writes, reads = spans(run, "write metrics"), spans(run, "read metrics")
    missing = [r for r in range(world_size) if r not in writes]
    if missing or 0 not in reads:
        return Verdict(
            False,
            "✗ not yet: keep the spans: every rank's 'write metrics' and rank 0's 'read metrics'"
            + (f" (ranks {missing} wrote nothing)" if missing else ""),
        )
    computed = {r: sum(e.end - e.start for e in spans(run, "compute").get(r, [])) for r in range(world_size)}
    owed = {r: STEPS * BASE_COMPUTE + delay * sum(r == step % world_size for step in range(STEPS)) for r in computed}
    short = {r: s for r, s in computed.items() if s < 0.8 * owed[r]}
    if short:
        made = ", ".join(f"rank {r} {s:.2f} s of {owed[r]:.2f} s" for r, s in sorted(short.items()))
        return Verdict(
            False,
            f"✗ not yet: keep the training loop: every rank computes its {STEPS} steps inside 'compute' spans "
            f"({made}). Remove what makes the ranks wait, not their work.",
        )
    files = run[0].value or []
    if len(files) != world_size:
        return Verdict(False, f"✗ not yet: rank 0 saw {len(files)} of {world_size} files")
    order = ordering.order(run)
    for rank in range(world_size):
        start = writes[rank][0].start
        polled = ordering.polls(run[rank].events)
        waits = [
            (a, b) for a, b in order.edges_into(rank) if order._time(b) <= start and _waits(order.event_at(b), polled)
        ]
        if waits:
            return Verdict(False, f"✗ not yet: the ranks still meet before writing: {_meetings(order, rank, waits)}")
    problem = not_ordered(
        run,
        folder,
        {r: work_end(run, r, writes[r][-1]) for r in range(world_size)},
        {0: work_start(run, 0, reads[0][0])},
    )
    if problem:
        return Verdict(False, f"✗ not yet: rank 0 saw every file this time, but {problem}")
    after = [
        e
        for e in run[0].events
        if e.kind in _SYNC_KINDS and e.start >= writes[0][-1].end and e.end is not None and e.end <= reads[0][0].start
    ]
    needed = next(
        (
            i
            for i, e in enumerate(after)
            if all(order.ordered_at(r, writes[r][-1].end, 0, e.end) for r in range(world_size))
        ),
        None,
    )
    by = f"{after[needed].name} at line {after[needed].line}" if needed is not None else "what rank 0 waited for"
    # what can still make rank 0 wait after the call that ordered every write (a loop's last read of a counter
    # that was already reached, add(key, 0), waits for nobody: attack22 a13)
    polled = ordering.polls(run[0].events)
    extra = [e for e in after[needed + 1 :] if _waits(e, polled)] if needed is not None else []
    if extra:
        names = ", ".join(sorted({e.name for e in extra}))
        return Verdict(
            False,
            f"✗ not yet: rank 0 saw all files, ordered by {by}; "
            f"the {len(extra)} call(s) after it ({names}) protect nothing",
        )
    return Verdict(
        True,
        f"✓ rank 0 saw all {world_size} files, every write ordered before its read by {by}, "
        f"and no rank waited for another in the loop ({function_seconds(run):.2f} s, delay {delay} s)",
    )
