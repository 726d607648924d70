"""Notebook 03's exercise: a rank-0-only call into ``save_checkpoint()``, whose barrier only rank 0 reaches.

The learner's ``train(ckpt_dir, steps, save_every, save_delay)`` must let every rank finish, have rank 0
alone write the checkpoints (``hidden_collective.write_checkpoint`` records a "save" span and the file
operations) and have every rank read the last one only after it is complete. The check runs it twice, with
a fast disk and with a slow one (random delays), and decides from what the runs recorded:

- every rank finished (a dummy collective or an extra barrier leaves the ranks' calls out of step: the run
  times out, and the message points at the ledger);
- only rank 0 changed files in the checkpoint folder, and every rank read ``last.pt``;
- the ordering model (:mod:`barrierlab.ordering`, on gloo) orders rank 0's last write of ``last.pt``
  before every other rank's read of it: a barrier, a blocking all_reduce, ``main_process_first``, a store
  key set after the write, send/recv or a broadcast from rank 0, an async call and its ``wait()`` all do.
  A sleep of any length, polling for the file, an ``async_op=True`` call never waited for, or a barrier
  before the write does not, and the message names the read and the write that nothing ordered (a sleep
  long enough to make the run time out, or to outlast its deadline, is told as that instead).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile

from barrierlab.exercises import Verdict, accesses, check_arguments, not_yet, race_words, unordered

#: Disk delays (seconds) of the two runs: the first fast, the second slow.
FAST_DISK = (0.02, 0.08)
SLOW_DISK = (1.0, 1.3)
#: What the check changes: files created, written, renamed or removed.
_CHANGES = ("write", "append", "rename", "remove")


def _ranks(ranks) -> str:
    from barrierlab.words import rank_list

    return rank_list(sorted(ranks))


def check(train, steps: int = 4, save_every: int = 2, world_size: int = 4, seed: int | None = None) -> Verdict:
    """Run ``train`` with a fast and a slow disk on ``world_size`` ranks and judge what the runs recorded."""
    import barrierlab as bl

    check_arguments(train=train, steps=steps, save_every=save_every, world_size=world_size, seed=seed)
    if save_every > steps:  # attack19 a08: no checkpoint could be written, and the learner's code was blamed
        raise ValueError(f"save_every must be at most steps ({steps}), got {save_every}: no checkpoint would be written")
    rng = random.Random(seed)
    delays = (rng.uniform(*FAST_DISK), rng.uniform(*SLOW_DISK))
    for delay in delays:
        folder = tempfile.mkdtemp(prefix="barrierlab-nb03-")
        try:
            run = bl.run(
                train,
                world_size,
                kwargs=dict(ckpt_dir=folder, steps=steps, save_every=save_every, save_delay=delay),
                timeout=delay + 2.0,  # a deadlock fails in seconds; setting up 4 ranks on a busy machine fits
                deadline=delay + 6.0,
            )
            verdict = _judge(run, folder, steps, save_every, delay)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if verdict is not None:
            return verdict
    return Verdict(
        True,
        f"✓ every rank finished, only rank 0 wrote the {steps // save_every} checkpoints, and the record orders "
        f"rank 0's last write before every rank's read, with a fast disk ({delays[0]:.2f} s per write) and a "
        f"slow one ({delays[1]:.2f} s)",
    )


def _judge(run, folder: str, steps: int, save_every: int, delay: float) -> Verdict | None:
    files = accesses(run, folder)
    races = unordered(run, folder)
    writers = {a.rank for a in files if a.how in _CHANGES} | {e.rank for e in _saves(run)}
    if writers - {0}:
        return not_yet(_other_writers(files, writers - {0}))
    if not run.ok:
        crashed = [r.rank for r in run if r.status == "raised" and not _is_timeout(r.error_message)]
        if crashed and races:
            bad = run[crashed[0]]
            return not_yet(
                f"rank {bad.rank} raised {type(bad.exception).__name__} while reading the checkpoint: "
                f"{race_words(races[0])}."
            )
        return not_yet(
            f"not every rank finished ({run.diagnosis.headline}) Read the check's run: v = nb03.check(train), "
            "then print(v.run.ledger()). Every rank must make the same collective calls in the same order, and "
            "`save_checkpoint()` contains one.",
            run,
        )
    if not writers:
        return not_yet("no checkpoint was written. Keep calling the save helper: rank 0 writes the checkpoints.")
    saves = _saves(run)
    expected = steps // save_every
    if len(saves) != expected:
        return not_yet(
            f"rank 0 wrote {len(saves)} checkpoints with the save helper; it should write one every "
            f"{save_every} steps, {expected} in {steps} steps."
        )
    if min(e.duration for e in saves) < 0.9 * delay:
        return not_yet("pass `save_delay` on to the save helper: the check makes rank 0's disk slow with it.")
    last = os.path.join(os.path.realpath(folder), "last.pt")
    readers = {a.rank for a in files if a.how == "read" and os.path.realpath(a.path) == last}
    missing = set(range(run.world_size)) - readers
    if missing:
        return not_yet(
            f"{_ranks(missing)} never read the checkpoint file: every rank evaluates the last one "
            "(with `load_checkpoint`), rather than being handed its contents."
        )
    if races:
        return not_yet(
            f"every rank finished, but nothing made the readers wait for rank 0's write: {race_words(races[0])}."
        )
    last_step = steps // save_every * save_every  # the step of the last checkpoint (attack19 a08: steps=5, save_every=2)
    wrong = {r.rank: r.value for r in run if r.value != last_step}
    if wrong:
        return not_yet(
            f"{_ranks(wrong)} did not return the step of the last checkpoint ({last_step}): "
            f"got {sorted(set(map(repr, wrong.values())))}. Return what `load_checkpoint()` read."
        )
    return None


def _other_writers(files: list, others: set[int]) -> str:
    """Why ranks other than 0 must not write, said of the files they changed: one rank 0 wrote too is a race;
    files of their own are not (review78d M5: ranks 1-3 wrote last1.pt-last3.pt, and were said to race on one
    file with rank 0)."""
    zero = {os.path.realpath(a.path) for a in files if a.how in _CHANGES and a.rank == 0}
    theirs = {os.path.realpath(a.path) for a in files if a.how in _CHANGES and a.rank in others}
    if not theirs or theirs & zero:
        return (
            f"{_ranks(others)} wrote the checkpoint too. Only rank 0 should write it: several ranks writing one "
            "file race on it (and on a real cluster, on a shared disk)."
        )
    names = sorted({os.path.basename(p) for p in theirs if not p.endswith(".tmp")} or map(os.path.basename, theirs))
    shown = ", ".join(f"`{n}`" for n in names[:4]) + (", …" if len(names) > 4 else "")
    return (
        f"{_ranks(others)} wrote checkpoint files of their own ({shown}), which no other rank wrote. Only rank 0 "
        "should write the checkpoint, and every rank read rank 0's: a copy per rank is a write per rank (on a real "
        "cluster, to the shared disk), and rank 0's file is still the one the readers must wait for."
    )


def _saves(run) -> list:
    return [e for e in run.events if e.name == "save" and e.kind == "io" and e.end is not None]


def _is_timeout(message: str) -> bool:
    return "Timed out" in message or "timed out" in message
