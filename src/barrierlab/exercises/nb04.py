"""Notebook 04's exercise: find and fix the collective hidden in ``find_the_bug``'s rank-0-only evaluation.

The learner's ``train(steps)`` must let every rank finish and make rank 0 return the validation loss
averaged over all ranks. The check runs it for the notebook's 4 steps and for a random number of steps, and
decides from what the runs recorded:

- every rank finished: a sleep or an extra barrier leaves the ranks' calls out of step, and the message is
  the run's diagnosis (which call which ranks made);
- every rank computed the loss of its own share (``find_the_bug.local_loss`` records a "validation loss"
  span): a dummy all_reduce on the other ranks, dropping the averaging, a fixed number or rank 0 computing
  every share itself skip that work;
- the ordering model (:mod:`barrierlab.ordering`, on gloo) orders every rank's loss before rank 0's
  result, and no file handoff races: an all_reduce, reduce, gather or all_gather (tensor or object),
  send/recv, store keys, an async call and its ``wait()`` (or its future's, or a poll of ``is_completed()`` that saw it done), or files read after a barrier all do; an
  ``async_op=True`` call never waited for, or files read after a sleep, do not;
- rank 0's value equals the average of a reference run of the same steps, also in a last run where every
  other rank is held back in ``local_loss`` for longer than rank 0 took after its own loss: a value read
  before a ``wait()`` (which no event shows) arrived by timing, and is then wrong.
"""

from __future__ import annotations

import math
import random

from barrierlab.exercises import Verdict, call_words, check_arguments, not_yet, race_words

#: Steps the check trains for, chosen at random, so that no fixed number passes.
STEPS = (3, 6)
#: Seconds the check's last run holds every rank but 0 back in ``local_loss``: half a second plus 1.5 times what
#: rank 0 took from its own loss to its end in the run before (a sleep that hid a read is within that), at most 8
#: (the run before has a 4 s deadline, so rank 0's tail is shorter than that).
HOLD_LEAST, HOLD_MOST = 0.5, 8.0
#: The span ``find_the_bug.local_loss`` records around one rank's validation loss.
LOSS_SPAN = "validation loss"


def reference(steps: int = 4):
    """What a correct ``train`` computes, with every rank's own loss for the feedback: (average, local)."""
    import torch
    import torch.distributed as dist

    from barrierlab.scenarios.find_the_bug import evaluate, local_loss, train_step

    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    for step in range(1, steps + 1):
        train_step(model, rank, step)
    return evaluate(model, rank), local_loss(model, rank)


def check(train, world_size: int = 4, seed: int | None = None) -> Verdict:
    """Run ``train`` and the reference for the same random number of steps and judge rank 0's result."""
    import barrierlab as bl

    check_arguments(train=train, world_size=world_size, seed=seed)
    steps = random.Random(seed).randint(*STEPS)
    for tried in (4, steps):  # the notebook's own step count first, so its feedback reads the same every time
        run = bl.run(train, world_size, kwargs=dict(steps=tried), timeout=1.0, deadline=4.0)
        if not run.ok and _unordered(run):  # a read of a file before it was written raised: the race is the cause
            return not_yet(_unordered(run))
        if not run.ok:
            return not_yet(
                f"not every rank finished ({run.diagnosis.headline}) Use the tools on the check's run "
                "(v = nb04.check(train), then v.run.ledger(), v.run.stuck), TORCH_DISTRIBUTED_DEBUG=DETAIL, "
                "barrierlab.lint.",
                run,
            )
        problem = _unordered(run)
        if problem:
            return not_yet(problem)
    value = run[0].value
    if not _a_number(value):
        return not_yet(f"rank 0 should return the validation loss (a number), got {value!r}")
    truth = bl.run(reference, world_size, kwargs=dict(steps=steps), timeout=5.0, check=True)
    average, own = truth[0].value
    if _same(value, own):
        return not_yet(
            f"rank 0 returned its own validation loss ({value:.4f}), not the average over all ranks "
            f"({average:.4f}). Each rank must compute the loss of its own share (local_loss(model, rank)), and the "
            "averaging must combine them."
        )
    problem = _skipped(run) or _not_delivered(run)
    if problem:
        return not_yet(problem)
    if _same(value, average):
        problem = _timing_only(train, run, steps, average, world_size)
        if problem:
            return not_yet(problem)
        return Verdict(
            True,
            f"✓ every rank finished, every rank's validation loss reached rank 0 through {_carriers(run)}, and "
            f"rank 0 reports their average ({value:.4f} after {steps} steps, {world_size} ranks)",
        )
    early = (  # attack19 a06: a read before the wait was only asked about every rank's contribution
        " Or did rank 0 read an async_op=True call's tensor before work.wait() returned? Only then does it hold "
        "the result."
        if _async_on_rank_0(run)
        else ""
    )
    return not_yet(
        f"rank 0 returned {value:.4f}, but the validation loss averaged over all ranks is {average:.4f} after "
        f"{steps} steps. Did every rank contribute its own validation loss, once?{early}"
    )


def _a_number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _same(value: float, expected: float) -> bool:
    """Equal up to float rounding (the ranks' sums may add in another order than the reference's)."""
    return math.isclose(value, expected, rel_tol=1e-5, abs_tol=1e-6)


def _timing_only(train, run, steps: int, average: float, world_size: int) -> str | None:
    """None if rank 0 still returns the average when every other rank is held back in ``local_loss``, longer
    than rank 0 took from its own loss to its end in ``run``; else what it returned, in words. What rank 0 read
    before a wait (``async_op=True``, then the tensor, then ``wait()``) has no event of its own: holding the
    others back is what shows that only the clock had put their sum there."""
    import barrierlab as bl
    from barrierlab.scenarios.find_the_bug import HOLD_BACK
    from barrierlab.words import rank_list

    mine = _computed(run)[0]
    tail = run[0].ended - mine[-1].end if mine else 0.0
    hold = min(HOLD_MOST, HOLD_LEAST + 1.5 * max(0.0, tail))
    late = bl.run(
        train,
        world_size,
        kwargs=dict(steps=steps),
        timeout=1.0 + hold,
        deadline=4.0 + hold,
        env={HOLD_BACK: f"{hold:.3f}"},
    )
    others = rank_list(range(1, world_size))
    if not late.ok:
        return (
            f"with {others} held back {hold:.1f} s in local_loss, not every rank finished ({late.diagnosis.headline})"
        )
    value = late[0].value
    if _a_number(value) and _same(value, average):
        return _unordered(late)
    shown = f"{value:.4f}" if _a_number(value) else repr(value)[:80]
    said = (
        f"rank 0 returned the average ({average:.4f}) only because the others were quick: with {others} held "
        f"back {hold:.1f} s in local_loss, it returned {shown}. "
    )
    if _async_on_rank_0(run):
        return said + (
            "Rank 0 read the result before the call that brings it had finished: an async_op=True call's result "
            "is in the tensor only after work.wait() returns, so read it after the wait"
        )
    return said + (  # attack19 a06: a store read after a sleep makes no async call
        "Nothing made rank 0 wait for the others' losses before it read them (a sleep is a guess, not an "
        "ordering): use a call that returns only once every rank's loss is there (a blocking reduce or "
        "all_reduce, a gather, or store.get, which waits for its key)"
    )


def _async_on_rank_0(run) -> bool:
    """Whether rank 0 made an ``async_op=True`` collective: what a read before its ``wait()`` can get wrong."""
    return any(e.kind == "collective" and e.is_async for e in run[0].events)


def _unordered(run) -> str | None:
    """A file handoff that nothing orders (the losses passed through files after a sleep), in words."""
    from barrierlab import ordering

    races = ordering.races(run)
    if not races:
        return None
    if run.ok:
        return f"every rank finished, but {race_words(races[0])}."
    bad = run[run.failed[0]]
    return f"rank {bad.rank} {bad.status} ({bad.error_message[:80]}), and {race_words(races[0])}."


def _computed(run) -> dict[int, list]:
    return {r.rank: [e for e in r.events if e.name == LOSS_SPAN and e.end is not None] for r in run}


def _skipped(run) -> str | None:
    """None if every rank computed the loss of its own share; else who did not, in words."""
    from barrierlab.words import rank_list

    computed = _computed(run)
    missing = [rank for rank, found in computed.items() if not found]
    if not missing:
        return None
    extra = len(computed[0]) - 1
    who = (
        f"rank 0 computed {extra + 1} shares itself"
        if extra > 0
        else "what they contributed, if anything, was not their validation loss"
    )
    return (
        f"{rank_list(missing)} never computed {'its' if len(missing) == 1 else 'their'} own validation loss "
        f"(`evaluate` → `local_loss`): {who}. Every rank evaluates its own share of the validation set (on a "
        "real job rank 0 does not have the others' data), and the averaging combines them."
    )


def _carriers(run) -> str:
    """The calls rank 0 made from its own validation loss on: what brought the others' losses, in words."""
    mine = _computed(run)[0]
    since = mine[0].start if mine else 0.0
    names = []
    for e in run[0].events:
        ordering_call = e.kind in ("collective", "p2p", "store") or (e.kind == "wait" and e.of is not None)
        if ordering_call and e.start >= since:
            name = call_words(e)
            if name not in names:
                names.append(name)
    return ", ".join(names) or "what the ranks called"


def _not_delivered(run) -> str | None:
    """None if the model orders every rank's validation loss before rank 0's result; else the first rank whose
    loss nothing carried to rank 0."""
    from barrierlab import ordering

    order = ordering.order(run)
    done = run[0].ended
    for rank, found in _computed(run).items():
        if rank == 0:
            continue
        computed = found[-1].end
        if not order.ordered_at(rank, computed, 0, done):
            return (
                f"nothing orders rank {rank}'s validation loss (computed at t={computed:.3f} s) before rank 0's "
                f"result (t={done:.3f} s) on gloo: rank 0 did not wait for it, and the order came from timing. "
                "Let it travel to rank 0 through a call that waits for it: a blocking all_reduce or reduce, "
                "gather, send/recv, a store key, or an async call's work.wait()"
            )
    return None
