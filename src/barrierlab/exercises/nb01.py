"""Checks for notebook 01 (barriers at initialization).

The exercise: rank 0 builds a vocabulary file (a ``build`` span) that every rank then reads (a ``read`` span),
with a barrier in the wrong place. The check runs the learner's ``fn(folder, build_seconds)`` twice with a
random build time and decides from the record, not from the words read: each other rank must have read only
after a collective that rank 0 entered *after* its build and that the reader left only after that entry
(a barrier, a blocking all_reduce, ``main_process_first``'s all_gather_object, a broadcast from rank 0).
A sleep, an ``async_op=True`` call never waited for, a barrier still before the build, or a barrier called by
some ranks only are rejected; so is every rank building its own copy (only rank 0 may build).
"""

from __future__ import annotations

import random
import tempfile

import barrierlab as bl
from barrierlab.exercises.nb00 import TIMEOUT, Verdict, links, spans, verdict
from barrierlab.result import Run

WORLD = 4
VOCAB = ["<pad>", "<unk>", "the", "a", "of"]


def check_vocab(fn, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run ``fn(folder, build_seconds)`` twice on 4 ranks with a random build time (0.2-0.5 s)."""
    rng = random.Random(seed)
    for _ in range(2):
        build_seconds = round(rng.uniform(0.2, 0.5), 3)
        run = bl.run(fn, WORLD, args=(tempfile.mkdtemp(prefix="barrierlab-vocab-"), build_seconds),
                     timeout=TIMEOUT)
        ok, message = _judge(run)
        if not ok:
            return verdict(False, message, quiet)
    return verdict(True, message, quiet)


def _judge(run: Run) -> tuple[bool, str]:
    raised = [r.rank for r in run if r.status == "raised" and not _is_timeout(r.error_message)]
    if raised and all(isinstance(run[r].exception, OSError) for r in raised):
        return False, (f"rank {raised[0]} raised {type(run[raised[0]].exception).__name__}: it read vocab.txt "
                       "before rank 0 had written it")
    if not run.ok:
        return False, f"the run did not finish: {run.diagnosis.headline}"
    builds, reads = spans(run, "build"), spans(run, "read")
    if sorted(builds) != [0]:
        who = sorted(builds) or "no rank"
        return False, (f"'build' ran on {who}: rank 0 alone builds the vocabulary (that is the point of the "
                       "pattern); keep the `if rank == 0:` block and its span")
    missing = [r for r in range(run.world_size) if r not in reads]
    if missing:
        return False, f"rank {missing[0]} has no 'read' span: every rank must read the file (keep the span)"
    if run.values != [VOCAB] * run.world_size:
        return False, f"the ranks read {run.values}; each should read {VOCAB}"
    built = builds[0][-1].end
    for reader in range(1, run.world_size):
        found, near = links(run, 0, built, reader, reads[reader][0].start)
        if not found:
            if near:
                return False, f"every rank read the vocabulary, but {near[0]}: the order was luck"
            return False, (f"every rank read the vocabulary this time, but nothing made rank {reader} wait for rank "
                           "0's build: a collective every rank reaches must come after the build and before the "
                           "read (a sleep only makes the race rarer; the build time changes from run to run)")
    before = [e for e in run[0].events if e.is_collective and e.end is not None and e.end <= builds[0][0].start]
    extra = (f" (the {before[0].name} before the build is not needed: it makes every rank wait and orders "
             "nothing the readers need)" if before else "")
    return True, "every rank read the whole vocabulary, and only after a collective rank 0 entered once it " \
                 "had finished writing" + extra


def _is_timeout(message: str) -> bool:
    return "Timed out" in message or "timed out" in message
