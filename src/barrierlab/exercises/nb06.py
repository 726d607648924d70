"""Notebook 06's exercise check: hand rank 0's vocabulary over as an object, not through a file and a barrier.

The exercise asks for one tool, ``dist.broadcast_object_list``, and says so; the check says so too when a
run used another one. It decides from what the run recorded: what every rank returned, which rank ran
``build_vocab`` (it records a "build vocab" span), every file access of the run, in the folder or anywhere else
(not only what is left in it: a file written and removed again is still a file handoff; attack21 a03: one in a
cache folder of the learner's is one too), which collectives, point-to-point calls
and store calls each rank made, and the ordering model (:mod:`barrierlab.ordering`, on gloo): rank 0's
build must happen before every rank's return. A handoff through a file names the write and the read, and
whether anything ordered them; a store key or another collective that orders the handoff is told that its
order is right (notebooks 00-02 accept it) but that this exercise practises ``broadcast_object_list``.
"""

from __future__ import annotations

import os
import tempfile

import barrierlab as bl
from barrierlab import ops, ordering
from barrierlab.exercises import Verdict, accesses, check_arguments, race_words, unordered
from barrierlab.words import rank_list

EXPECTED = {"<pad>": 0, "<unk>": 1, "barrier": 2, "rank": 3, "store": 4}
TOOL = "broadcast_object_list"
#: What the exercise asks for, as every message says it.
ASKED = "this exercise asks for dist.broadcast_object_list(objects, src=0): no file, no barrier"


def check_share_vocab(fn, world_size: int = 4) -> Verdict:
    """Run ``fn(folder)`` on ``world_size`` ranks: ✓ if every rank returns rank 0's vocabulary, built once
    on rank 0, handed over by ``broadcast_object_list`` alone (no file, no barrier, no other call), and the
    record orders the build before every rank's return."""
    check_arguments(fn=fn, world_size=world_size)
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(fn, world_size, args=(folder,), timeout=3)
        message = _judge(run, folder)
    if message:
        return Verdict(False, "✗ not yet: " + message)
    return Verdict(
        True,
        "✓ every rank got rank 0's vocabulary through broadcast_object_list, and the record orders rank 0's "
        "build before every rank's return: built once, nothing handed over through a file, no barrier",
    )


def _judge(run, folder: str) -> str | None:
    if not run.ok:
        if unordered(run, None):  # a read of the file before it was written raised: the race is the cause
            return _through_a_file(run, folder, accesses(run, None), _calls(run))
        return f"{rank_list(run.failed)} did not finish: {run.diagnosis.headline}"
    builders = [r.rank for r in run if any(e.name == "build vocab" for e in r.events)]
    if builders != [0]:
        return (
            f"build_vocab ran on {rank_list(builders) if builders else 'no rank'}; rank 0 alone should pay "
            "for it (on a real job: one download, one scan of the corpus), and the others receive the result"
        )
    wrong = [r.rank for r in run if r.value != EXPECTED]
    if wrong:
        return f"{rank_list(wrong)} did not return the vocabulary (rank {wrong[0]}: {run[wrong[0]].value!r})"
    files = accesses(run, None)
    calls = _calls(run)
    if _handed_over(files):
        return _through_a_file(run, folder, files, calls)
    others = sorted({name for names in calls.values() for name in names if name != TOOL})
    if others:
        return _other_tools(run, calls, others)
    problem = _unordered(run)
    if problem:
        return problem
    return None


def _calls(run) -> dict[int, list[str]]:
    """Each rank's collective, point-to-point and store calls, by name (store calls as ``store.<name>``).
    Calls that create process groups (``new_group``) are left out: they make the group a call runs on,
    they hand nothing over."""
    return {
        r.rank: [
            f"store.{e.name}" if e.kind == "store" else e.name
            for e in r.events
            if e.kind in ("collective", "p2p", "store") and not _makes_a_group(e.name)
        ]
        for r in run
    }


def _makes_a_group(name: str) -> bool:
    op = ops.BY_NAME.get(name)
    return op is not None and op.kind == ops.GROUP


def _handed_over(files) -> bool:
    """Whether a rank used (read, listed, renamed, removed) a file or folder another rank wrote or made: a file
    only its writer touches (a cache no other rank reads) hands nothing over (review 9b)."""
    writers: dict[str, set[int]] = {}
    for a in files:
        if a.how in ("write", "append", "rename", "mkdir"):
            writers.setdefault(a.path, set()).add(a.rank)
    return any(
        a.how not in ("write", "append", "mkdir") and writers.get(a.path, {a.rank}) - {a.rank}
        for a in files
    ) or any(len(ranks) > 1 for ranks in writers.values())


def _through_a_file(run, folder: str, files, calls) -> str:
    written = sorted({os.path.basename(a.path) for a in files if a.how in ("write", "append", "rename")})
    used = sorted({name for names in calls.values() for name in names})
    races = unordered(run, None)
    with_ = f" with {', '.join(used)}" if used else ""
    if races:
        what = f"nothing orders the handoff: {race_words(races[0])}"
    else:
        # a barrier blocks the host on NCCL too; an all_reduce or a store key's order is the gloo model's (review15b)
        scope = "" if used == ["barrier"] else " on gloo"
        what = (
            f"{', '.join(used) or 'what the ranks called'} orders rank 0's write before every read{scope}, so the "
            "handoff is safe, but the file is what this exercise removes"
        )
    return (
        f"share_vocab still hands the vocabulary over through a file ({', '.join(written) or 'read'}){with_}: "
        f"{what}. {ASKED[0].upper()}{ASKED[1:]}; it carries the object itself."
    )


def _other_tools(run, calls, others: list[str]) -> str:
    if TOOL in {name for names in calls.values() for name in names}:
        return (
            f"share_vocab calls {', '.join(others)} besides broadcast_object_list. Once broadcast_object_list "
            "has returned, every rank holds the vocabulary: nothing is left to wait for (and a barrier is one "
            f"more call every rank must reach). {ASKED[0].upper()}{ASKED[1:]}, and nothing else."
        )
    ordered = _unordered(run) is None
    verdict = (
        "the record orders rank 0's build before every rank's return, so the handoff is right (the checks of "
        "notebooks 00-02 accept it)"
        if ordered
        else "and nothing orders rank 0's build before every rank's return"
    )
    return f"the vocabulary reached every rank through {', '.join(others)}: {verdict}; but {ASKED}."


def _unordered(run) -> str | None:
    """None if the model orders rank 0's build before every rank's return; else the first rank it does not."""
    order = ordering.order(run)
    built = max(e.end for e in run[0].events if e.name == "build vocab" and e.end is not None)
    for r in run:
        if r.rank != 0 and not order.ordered_at(0, built, r.rank, r.ended):
            return (
                f"nothing orders rank 0's build of the vocabulary (done at t={built:.3f} s) before rank {r.rank} "
                f"returned it (t={r.ended:.3f} s) on gloo: the order came from timing; {ASKED}"
            )
    return None
