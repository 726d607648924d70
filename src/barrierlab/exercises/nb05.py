"""Notebook 05's exercise check: keep only the barrier that is needed.

The job: a training loop, then every rank writes its metrics file, then rank 0 lists the folder. What
must be ordered is each rank's write before rank 0's read, and nothing else. The check decides from the
recorded events: is there one collective, at the same position in every rank's sequence, that every
rank entered after its write and that rank 0 left before its read, of a kind no rank leaves before every
rank has arrived? Do the ranks meet inside the loop (a barrier or a dummy collective per step)? Does a
second collective follow the one that orders the write? Delays are drawn at random for every check, so
a ``time.sleep`` tuned to one run does not order anything.
"""

from __future__ import annotations

import random
import tempfile

import barrierlab as bl
from barrierlab.exercises import Verdict
from barrierlab.plot import function_seconds

#: Blocking collectives that no rank leaves before every rank has called them (gloo).
MEET_ALL = ("barrier", "monitored_barrier", "all_reduce", "all_gather", "all_gather_object",
            "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
            "all_to_all_single", "gather_object")



def _spans(rank, name):
    return [e for e in rank.events if e.name == name and e.end is not None]


def ordering_collective(run) -> int | None:
    """The sequence number of a collective that orders every rank's write before rank 0's read, or None."""
    read = _spans(run[0], "read metrics")
    if not read:
        return None
    by_seq = []
    for rank in run:
        writes = _spans(rank, "write metrics")
        if not writes:
            return None
        by_seq.append({e.seq: e for e in rank.events
                       if e.kind == "collective" and e.seq and e.start >= writes[-1].end})
    for seq, call in sorted(by_seq[0].items()):
        calls = [calls.get(seq) for calls in by_seq]
        if (all(c is not None and c.name == call.name for c in calls) and call.name in MEET_ALL
                and call.end is not None and call.end <= read[0].start):
            return seq
    return None


def check(fn, world_size: int = 4, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, steps=4, delay=...)`` on ``world_size`` ranks with a random delay and judge the run."""
    rng = random.Random(seed)
    delay = round(rng.uniform(0.12, 0.25), 3)
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(fn, world_size, args=(folder,), kwargs=dict(steps=4, delay=delay), timeout=3)
    if not run.ok:
        return Verdict(False, f"✗ not yet: the run failed: {run.diagnosis.headline}")
    missing = [r.rank for r in run if not _spans(r, "write metrics")]
    if missing or not _spans(run[0], "read metrics"):
        return Verdict(False, "✗ not yet: keep the spans: every rank's 'write metrics' and rank 0's 'read metrics'"
                               + (f" (ranks {missing} wrote nothing)" if missing else ""))
    files = run[0].value or []
    if len(files) != world_size:
        return Verdict(False, f"✗ not yet: rank 0 saw {len(files)} of {world_size} files")
    before_write = []
    for r in run:
        write = _spans(r, "write metrics")[0]
        before_write += [e for e in r.events if e.kind == "collective" and e.start < write.start]
    if before_write:
        names = sorted({e.name for e in before_write})
        return Verdict(False, f"✗ not yet: the ranks still meet before writing ({', '.join(names)}, "
                               f"{len(before_write) // world_size} times per rank). A collective every rank must "
                               "reach makes the group pay for every rank's slow step; nothing in the loop needs it.")
    seq = ordering_collective(run)
    if seq is None:
        after = sorted({e.name for e in run[0].events if e.kind == "collective"})
        how = (f" (this check counts only calls that no rank leaves before every rank has called them, such as "
               f"barrier, all_reduce and all_gather on gloo; {', '.join(after)} is not one)" if after
               else " (a time.sleep only makes it likely)")
        return Verdict(False, "✗ not yet: rank 0 saw every file this time, but nothing guarantees it: no "
                               "collective that every rank must reach sits between the writes and rank 0's read"
                               + how)
    extra = [e for e in run[0].events if e.kind == "collective" and e.seq and e.seq != seq]
    if extra:
        return Verdict(False, f"✗ not yet: rank 0 saw all files, ordered by "
                               f"{_name(run[0], seq)} #{seq}; the other {len(extra)} collective(s) after the loop "
                               f"({', '.join(sorted({e.name for e in extra}))}) protect nothing")
    return Verdict(True, f"✓ rank 0 saw all {world_size} files, ordered by one {_name(run[0], seq)} per rank, "
                          f"in {function_seconds(run):.2f} s (delay {delay} s)")


def _name(rank, seq) -> str:
    return next(e.name for e in rank.events if e.kind == "collective" and e.seq == seq)
