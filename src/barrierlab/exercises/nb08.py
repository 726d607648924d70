"""Notebook 08's exercise check: fix both barrier bugs of the capstone's training script.

``notebooks/capstone/train.py`` trains a small DDP model; rank 0 alone calls ``save_checkpoint()``, whose
``dist.barrier()`` no other rank reaches (the job hangs), and rank 0 removes the checkpoint with nothing
ordering that after the other ranks' reloads (a race the job usually survives). The check runs the learner's
copy of the script as ``barrierlab run`` does (:func:`barrierlab.script.run_script`, 4 ranks, gloo) and
decides from the record, never from the source:

- the calls: every rank finished and made the same collective calls, in the same order (the recorded
  ``torch.distributed`` calls; DDP's own, issued from C++, are the same on every rank by construction);
- the work: rank 0, and only rank 0, wrote ``checkpoint.pt`` once per epoch and ``model.pt``; every rank
  reloaded ``checkpoint.pt``; rank 0 removed it, and it is gone;
- the order: no access of a file in the job's folder is unordered with a change of it on another rank, on
  gloo (:mod:`barrierlab.ordering`). A ``time.sleep``, or an async barrier never waited for, orders nothing.

Any mechanism that orders passes: a barrier every rank reaches, a blocking all_reduce (on gloo), store keys.
"""

from __future__ import annotations

import os
import tempfile

from barrierlab.exercises import Verdict, accesses, check_arguments, not_yet, passed, race_words, unordered
from barrierlab.words import rank_list

WORLD = 4
EPOCHS = 2
#: The group's timeout: a rank waiting for a call no other rank makes fails after this many seconds.
TIMEOUT = 2.0
DEADLINE = 30.0


def check(path: str, *, world_size: int = WORLD, epochs: int = EPOCHS) -> Verdict:
    """Run the script at ``path`` on ``world_size`` ranks in a fresh job folder and judge its record."""
    from barrierlab.script import run_script

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be the path of your copy of the script (str), got {type(path).__name__}")
    if not os.path.isfile(path):
        raise ValueError(f"path: no such script {os.fspath(path)!r}")
    check_arguments(world_size=world_size, epochs=epochs)
    with tempfile.TemporaryDirectory(prefix="barrierlab-nb08-") as workdir:
        run = run_script(
            path, world_size, ["--workdir", workdir, "--epochs", str(epochs)], timeout=TIMEOUT, deadline=DEADLINE
        )
        problem = judge(run, workdir, epochs)
    if problem:
        return not_yet(problem)
    return passed(
        f"every rank finished after the same collective calls; rank 0 alone wrote the {epochs} checkpoints and "
        "the exported model; every rank reloaded the last checkpoint; rank 0 removed it; and nothing in the job's "
        "folder was accessed in an order that came from timing (on gloo)"
    )


def collective_calls(run) -> dict[int, list]:
    """Each rank's recorded collective calls, in the order it made them."""
    return {
        r.rank: sorted((e for e in r.events if e.kind == "collective"), key=lambda e: e.start) for r in run.ranks
    }


def _call(e) -> str:
    where = f" at {os.path.basename(e.file)} line {e.line}" if e.file else ""
    inside = f", in {e.func}" if e.func and e.func != "main" else ""
    return f"{e.name}{where}{inside}"


def unmatched_call(run) -> str | None:
    """The first position where the ranks' recorded collective calls differ, in words, or None. These are the
    script's own ``torch.distributed`` calls; DDP's (issued from C++) are left out, as the same on every rank."""
    calls = collective_calls(run)
    longest = max(len(c) for c in calls.values())
    for k in range(longest):
        at = {rank: (c[k].name if k < len(c) else None) for rank, c in calls.items()}
        if len(set(at.values())) == 1:
            continue
        makers = {rank: calls[rank][k] for rank, name in at.items() if name is not None}
        missing = [rank for rank, name in at.items() if name is None]
        first_rank, first = min(makers.items())
        others = [rank for rank in makers if makers[rank].name != first.name]
        if missing:
            who = rank_list(sorted(makers))
            return (
                f"of the script's own collective calls, {who} made #{k + 1} ({_call(first)}) and "
                f"{rank_list(missing)} never made a #{k + 1}: every rank must make the same collective calls in "
                "the same order"
            )
        return (
            f"the script's own collective call #{k + 1} differs: {rank_list([first_rank])} made {_call(first)}, "
            f"{rank_list(others)} made {_call(makers[others[0]])}"
        )
    return None


def judge(run, workdir: str, epochs: int = EPOCHS) -> str | None:
    """What is still wrong with the record of one run of the script, in words, or None."""
    unmatched = unmatched_call(run)
    if not run.ok:
        from barrierlab.diagnose import failed_by_itself

        races = unordered(run, workdir)
        raised = [r for r in run.failed if failed_by_itself(run[r])]
        if races and raised:  # a rank's own error (a file gone or not yet complete) while files raced: the cause
            bad = run[raised[0]]
            return (
                f"the job did not finish: rank {bad.rank} {bad.status}: {bad.error_message[:160]}. The record shows "
                f"why: {race_words(_latest(races, bad.rank))}"
            )
        if unmatched:
            return f"the job did not finish. From the record: {unmatched} (run.diagnosis says where each rank was)"
        bad = run[run.failed[0]]
        failed = f"the job did not finish: rank {bad.rank} {bad.status}: {bad.error_message[:160]}"
        races = unordered(run, workdir)
        return f"{failed}. The record shows why: {race_words(_latest(races))}" if races else failed
    if unmatched:
        return f"every rank finished, but {unmatched}; here the mismatch happened to pair up silently"
    checkpoint = os.path.realpath(os.path.join(workdir, "checkpoint.pt"))
    model = os.path.realpath(os.path.join(workdir, "model.pt"))
    files = accesses(run, workdir)

    def done(how: str, target: str) -> dict[int, int]:
        """Per rank, how often it did ``how`` to ``target`` (a rename onto a path counts as writing it)."""
        counts: dict[int, int] = {}
        for a in files:
            if a.how == how and os.path.realpath(a.path) == target:
                counts[a.rank] = counts.get(a.rank, 0) + 1
        return counts

    writers = done("write", checkpoint)
    if set(writers) - {0}:
        return (
            f"{rank_list(sorted(set(writers) - {0}))} wrote checkpoint.pt too: only rank 0 should save it "
            "(ranks writing one file race on it). Call save_checkpoint() on every rank if you like, but keep the "
            "writing under rank == 0"
        )
    if writers.get(0, 0) != epochs:
        return f"rank 0 wrote checkpoint.pt {writers.get(0, 0)} times; it saves one after each of the {epochs} epochs"
    if set(done("write", model)) != {0}:
        return "rank 0 did not export model.pt: keep step 5's export"
    readers = done("read", checkpoint)
    if set(readers) != set(range(run.world_size)):
        missing = sorted(set(range(run.world_size)) - set(readers))
        return f"{rank_list(missing)} never reloaded checkpoint.pt: keep step 4, every rank checks the checkpoint"
    if set(done("remove", checkpoint)) != {0} or os.path.exists(checkpoint):
        return (
            "the checkpoint was not removed by rank 0 at the end: keep the clean-up, and order it after the "
            "reloads instead of dropping it"
        )
    races = unordered(run, workdir)
    if races:
        return f"the job finished, but {race_words(_latest(races))}"
    return None


def _latest(races: list, rank: int | None = None):
    """The race whose earlier access came last: for a reload that raced with every save, the last save. Given
    the rank that failed, one of its own accesses (the read that found the file gone or half written) if any."""
    own = [race for race in races if rank in (race.first.rank, race.second.rank)]
    return max(own or races, key=lambda race: race.first.event.start)
