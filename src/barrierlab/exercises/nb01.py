"""Checks for notebook 01 (barriers at initialization).

The exercise: rank 0 builds a vocabulary file (a ``build`` span) that every rank then reads (a ``read`` span),
with a barrier in the wrong place. The check runs the learner's ``fn(folder, build_seconds)`` twice with a
random build time and asks the ordering model (:mod:`barrierlab.ordering`, on gloo) whether rank 0's build is
ordered before every other rank's read: a barrier or a blocking all_reduce after the build,
``main_process_first``, a broadcast from rank 0, a store key rank 0 sets after the build, send/recv all order
it. A sleep, an ``async_op=True`` call never waited for, a barrier still before the build, or a barrier
called by some ranks only do not; the message names the read and the write that nothing ordered. Every rank
building its own copy is rejected too (only rank 0 may build).
"""

from __future__ import annotations

import random
import shutil
import tempfile

import barrierlab as bl
from barrierlab import ops
from barrierlab.exercises import accesses, check_arguments
from barrierlab.exercises.nb00 import TIMEOUT, Verdict, not_ordered, spans, verdict, work_end, work_start
from barrierlab.result import Run

WORLD = 4
VOCAB = ["<pad>", "<unk>", "the", "a", "of"]


def check_vocab(fn, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, build_seconds)`` twice on 4 ranks with a random build time (0.2-0.5 s)."""
    check_arguments(fn=fn, seed=seed, quiet=quiet)
    rng = random.Random(seed)
    for _ in range(2):
        build_seconds = round(rng.uniform(0.2, 0.5), 3)
        folder = tempfile.mkdtemp(prefix="barrierlab-vocab-")
        try:
            run = bl.run(fn, WORLD, args=(folder, build_seconds), timeout=TIMEOUT)
            ok, message = _judge(run, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # each check made its own: none is left in the temp folder
        if not ok:
            return verdict(False, message, quiet)
    return verdict(True, message, quiet)


def _judge(run: Run, folder: str) -> tuple[bool, str]:
    builds, reads = spans(run, "build"), spans(run, "read")
    writers = sorted({a.rank for a in accesses(run, folder) if a.how in ("write", "append", "rename")})
    if sorted(builds) not in ([0], []) or writers not in ([0], []):
        who = sorted(set(builds) | set(writers))
        return False, (
            f"the vocabulary was built on ranks {who}: rank 0 alone builds it (that is the point of the "
            "pattern); keep the `if rank == 0:` block and its span"
        )
    raised = [r.rank for r in run if r.status == "raised" and not _is_timeout(r.error_message)]
    if raised and all(isinstance(run[r].exception, OSError) for r in raised) and 0 in builds:
        problem = not_ordered(run, folder, {0: builds[0][-1].end}, {r: run[r].ended for r in raised})
        return False, (
            f"rank {raised[0]} raised {type(run[raised[0]].exception).__name__}: it tried to read vocab.txt "
            "before rank 0 had written it" + (f"; {problem}" if problem else "")
        )
    if not run.ok:
        return False, f"the run did not finish: {run.diagnosis.headline}"
    if sorted(builds) != [0]:
        return False, "no rank has a 'build' span: keep the `if rank == 0:` block and its span"
    missing = [r for r in range(run.world_size) if r not in reads]
    if missing:
        return False, f"rank {missing[0]} has no 'read' span: every rank must read the file (keep the span)"
    if run.values != [VOCAB] * run.world_size:
        return False, f"the ranks read {run.values}; each should read {VOCAB}"
    problem = not_ordered(
        run,
        folder,
        {0: work_end(run, 0, builds[0][-1])},
        {r: work_start(run, r, reads[r][0]) for r in range(1, run.world_size)},
    )
    if problem:
        return False, f"every rank read the vocabulary this time, but {problem}"
    # a group made before the build (new_group, which every rank must call) is set-up, not an extra wait the
    # learner could drop: the barrier may need it (attack13 a06)
    before = [
        e
        for e in run[0].events
        if e.is_collective
        and e.end is not None
        and e.end <= builds[0][0].start
        and getattr(ops.BY_NAME.get(e.name), "kind", None) != ops.GROUP
    ]
    extra = (
        f" (the {before[0].name} before the build is not needed: it makes every rank wait and orders "
        "nothing the readers need)"
        if before
        else ""
    )
    return True, "every rank read the whole vocabulary, and the record orders rank 0's build before every read" + extra


def _is_timeout(message: str) -> bool:
    return "Timed out" in message or "timed out" in message
