"""Notebook 03's exercise: a rank-0-only call into ``save_checkpoint()``, whose barrier only rank 0 reaches.

The learner's ``train(ckpt_dir, steps, save_every, save_delay)`` must let every rank finish, have rank 0
alone write the checkpoints (``hidden_collective.write_checkpoint`` records a "save" span) and have every
rank read the last one (``load_checkpoint`` records a "load" span) only after it is complete. The check runs
it twice, with a fast disk and with a slow one (random delays), and decides from the recorded spans:
a sleep guesses the write time and fails one of the two runs; a dummy collective or an extra barrier
leaves the ranks' calls out of step and fails; every rank writing, or nobody, fails.
"""

from __future__ import annotations

import random
import shutil
import tempfile

from barrierlab.exercises import Verdict, not_yet

#: Disk delays (seconds) of the two runs: the first fast, the second slower than any sleep that the first
#: run would not expose.
FAST_DISK = (0.02, 0.08)
SLOW_DISK = (1.0, 1.3)
#: A rank that starts reading this long after the checkpoint was complete waited for a clock, not for rank 0.
MAX_LAG = 0.4




def _ranks(ranks) -> str:
    from barrierlab.words import rank_list

    return rank_list(sorted(ranks))


def check(train, steps: int = 4, save_every: int = 2, world_size: int = 4, seed: int | None = None) -> Verdict:
    """Run ``train`` with a fast and a slow disk on ``world_size`` ranks and judge what the runs recorded."""
    import barrierlab as bl

    if not callable(train):
        raise TypeError(f"check needs the function to run on every rank, got {train!r}")
    rng = random.Random(seed)
    delays = (rng.uniform(*FAST_DISK), rng.uniform(*SLOW_DISK))
    for delay in delays:
        folder = tempfile.mkdtemp(prefix="barrierlab-nb03-")
        try:
            run = bl.run(train, world_size, kwargs=dict(ckpt_dir=folder, steps=steps, save_every=save_every,
                                                       save_delay=delay),
                         timeout=delay + 1.0, deadline=delay + 4.0)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        verdict = _judge(run, steps, save_every, delay, fast=delay == delays[0])
        if verdict is not None:
            return verdict
    return Verdict(True, f"✓ every rank finished, only rank 0 wrote the {steps // save_every} checkpoints, and "
                         f"every rank read the last one after it was complete, with a fast disk "
                         f"({delays[0]:.2f} s per write) and a slow one ({delays[1]:.2f} s)")


def _judge(run, steps: int, save_every: int, delay: float, fast: bool) -> Verdict | None:
    if not run.ok:
        return not_yet(f"not every rank finished ({run.diagnosis.headline}) Read run.ledger(): every rank must "
                     "make the same collective calls in the same order, and `save_checkpoint()` contains one.")
    saves = [e for e in run.events if e.name == "save" and e.end is not None]
    if not saves:
        return not_yet("no checkpoint was written. Keep calling the save helper: rank 0 writes the checkpoints.")
    writers = {e.rank for e in saves}
    if writers != {0}:
        return not_yet(f"{_ranks(writers - {0})} wrote the checkpoint too. Only rank 0 should write it: several "
                     "ranks writing one file race on it (and on a real cluster, on a shared disk).")
    expected = steps // save_every
    if len(saves) != expected:
        return not_yet(f"rank 0 wrote {len(saves)} checkpoints; it should write one every {save_every} steps, "
                     f"{expected} in {steps} steps.")
    if min(e.duration for e in saves) < 0.9 * delay:
        return not_yet("pass `save_delay` on to the save helper: the check makes rank 0's disk slow with it.")
    complete = max(e.end for e in saves)
    loads = {}
    for e in run.events:
        if e.name == "load" and e.rank not in loads:
            loads[e.rank] = e
    missing = set(range(run.world_size)) - set(loads)
    if missing:
        return not_yet(f"{_ranks(missing)} never read the checkpoint: every rank evaluates the last one.")
    early = {r: complete - e.start for r, e in loads.items() if e.start < complete}
    if early:
        worst = max(early.values())
        return not_yet(f"{_ranks(early)} started reading the checkpoint up to {worst:.2f} s before rank 0 had "
                     f"finished writing it (this run's disk took {delay:.2f} s per write). Nothing made "
                     "them wait for rank 0; a sleep only guesses how long the write takes.")
    late = {r: e.start - complete for r, e in loads.items() if e.start - complete > MAX_LAG}
    if fast and late:
        return not_yet(f"{_ranks(late)} started reading {max(late.values()):.2f} s after the checkpoint was "
                     "complete: they waited for a clock, not for rank 0. Let a collective that every rank "
                     "calls do the waiting.")
    wrong = {r.rank: r.value for r in run if r.value != steps}
    if wrong:
        return not_yet(f"{_ranks(wrong)} did not return the step of the last checkpoint ({steps}): "
                     f"got {sorted(set(map(repr, wrong.values())))}. Return what `load_checkpoint()` read.")
    return None
