"""Notebook 04's exercise: find and fix the collective hidden in ``find_the_bug``'s rank-0-only evaluation.

The learner's ``train(steps)`` must let every rank finish and make rank 0 return the validation loss
averaged over all ranks. The check runs it for a random number of steps and compares with a reference run
of the same steps: a sleep or an extra barrier leaves the ranks' calls out of step and fails; a dummy
all_reduce on the other ranks, or dropping the averaging, finishes but returns the wrong loss.
"""

from __future__ import annotations

import math
import random

from barrierlab.exercises import Verdict, not_yet

#: Steps the check trains for, chosen at random, so that no fixed number passes.
STEPS = (3, 6)


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
    """Run ``train`` and the reference for the same random number of steps and compare rank 0's result."""
    import barrierlab as bl

    if not callable(train):
        raise TypeError(f"check needs the function to run on every rank, got {train!r}")
    steps = random.Random(seed).randint(*STEPS)
    for tried in (4, steps):  # the notebook's own step count first, so its feedback reads the same every time
        run = bl.run(train, world_size, kwargs=dict(steps=tried), timeout=1.0, deadline=4.0)
        if not run.ok:
            return not_yet(f"not every rank finished ({run.diagnosis.headline}) Use the tools: run.ledger(), "
                         "run.stuck, TORCH_DISTRIBUTED_DEBUG=DETAIL, barrierlab.lint.")
    value = run[0].value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return not_yet(f"rank 0 should return the validation loss (a number), got {value!r}")
    truth = bl.run(reference, world_size, kwargs=dict(steps=steps), timeout=5.0, check=True)
    average, own = truth[0].value
    if math.isclose(value, average, rel_tol=1e-5, abs_tol=1e-6):
        return Verdict(True, f"✓ every rank finished, and rank 0 reports the validation loss averaged over "
                             f"all {world_size} ranks ({value:.4f} after {steps} steps)")
    if math.isclose(value, own, rel_tol=1e-5, abs_tol=1e-6):
        return not_yet(f"rank 0 returned its own validation loss ({value:.4f}), not the average over all ranks "
                     f"({average:.4f}). The averaging must stay: make every rank take part in it.")
    return not_yet(f"rank 0 returned {value:.4f}, but the validation loss averaged over all ranks is "
                 f"{average:.4f} after {steps} steps. Did the other ranks contribute something other than "
                 "their own validation loss to the all_reduce?")
