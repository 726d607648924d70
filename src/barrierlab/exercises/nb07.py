"""Notebook 07's exercise check: fix the two races of ``race_results_file`` without barriers.

The lesson is "order exactly what needs ordering": rank 0 must have every rank's result before it writes or
reads the file's last state, and the other ranks need wait for nobody but rank 0 (the file's owner). The check
asks the ordering model (:mod:`barrierlab.ordering`, on gloo), for each seed's run:

- is any access of the results file unordered with a change of it on another rank (the truncation race, the
  read-before-append race)? A ``time.sleep`` leaves them unordered, however long;
- is every rank's evaluation (when its ``delays`` say it ended) ordered before rank 0's last access of the
  file? Rank 0 writing every rank's line itself skips the work instead of ordering it;
- did a rank other than 0 wait for a rank other than 0 (a barrier, or a collective every rank must reach
  such as a dummy ``all_reduce`` or ``gather_object``'s all_gather of sizes)?

One writer fed by ``gather``, by blocking ``send``/``recv``, or store keys ("created", "appended") pass.
"""

from __future__ import annotations

import os
import tempfile

import barrierlab as bl
from barrierlab import ops, ordering
from barrierlab.exercises import Verdict, accesses, check_arguments, race_words, unordered
from barrierlab.scenarios import race_results_file

#: The seeds the check runs by default (six runs). Each decides every rank's phase times; in seeds 1, 3, 14
#: and 16 a rank other than rank 0 finishes its work last (in 14 and 16 by more than 0.2 s).
SEEDS = (1, 2, 3, 4, 14, 16)


def results_complete(run, workdir: str) -> bool:
    """Rank 0 read every result, and the file still holds the header and one line per rank."""
    return _incomplete(run, workdir) is None


def _incomplete(run, workdir: str) -> str | None:
    """None if the results file is complete, else what is wrong with it, in words."""
    path = os.path.join(workdir, "results.csv")
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    expected = sorted(f"{r},{round(0.9 + r / 100, 2)}" for r in range(run.world_size))
    if not run.ok:
        return "the run did not finish"
    if run[0].value != f"{run.world_size} of {run.world_size} results":
        return f"rank 0 reported {run[0].value!r}, not '{run.world_size} of {run.world_size} results'"
    if lines[:1] != [race_results_file.HEADER]:
        where = f"line {lines.index(race_results_file.HEADER) + 1}" if race_results_file.HEADER in lines else "nowhere"
        return f"the header {race_results_file.HEADER!r} is not the file's first line (it is {where})"
    if sorted(lines[1:]) != expected:
        return f"the file kept {len(lines) - 1} result lines, {sorted(lines[1:])}, not {expected}"
    return None


def check_results(fn, seeds=SEEDS, world_size: int = 4) -> Verdict:
    """Run ``fn(workdir=..., seed=...)`` once per seed; ✓ only if every run is complete, without barriers,
    ordered by what the ranks recorded, and no rank but 0 waited for another."""
    check_arguments(fn=fn, seeds=seeds, world_size=world_size)
    seeds = list(seeds)
    for seed in seeds:
        with tempfile.TemporaryDirectory() as workdir:
            run = bl.run(fn, world_size, kwargs=dict(workdir=workdir, seed=seed), timeout=2, deadline=60)
            problem = _judge(run, workdir, seed)
        if problem:
            return Verdict(False, f"✗ not yet: seed {seed}: {problem}")
    return Verdict(
        True,
        f"✓ {len(seeds)} of {len(seeds)} runs complete, no barrier, every result ordered before rank 0's last "
        "use of the file, and no rank waited for anyone but rank 0",
    )


def _may_wait_for_others(event, rank: int) -> str | None:
    """Why a collective ``rank`` made may hold it for a rank other than rank 0, or None. The ordering model's
    edges are the waits gloo guarantees, and the check reads those below; a wait gloo allows without
    guaranteeing it has no edge: gloo runs a reduce along a ring of every rank (reduce.cc), so a non-root can
    wait for another non-root, though no edge says so (attack13 a14: one rank 1 s late held another for 1 s, and the check said no rank waited)."""
    if event.kind != "collective" or event.name != "reduce" or ops.root_of(event) == rank:
        return None
    return "gloo reduces along a ring of all the ranks, so a rank can wait for its neighbour"


def _judge(run, workdir: str, seed: int) -> str | None:
    if not run.ok:
        bad = run[run.failed[0]]
        return f"rank {bad.rank} {bad.status}: {bad.error_message[:100]}"
    wrong = _incomplete(run, workdir)
    if wrong:
        return wrong
    barriers = sum(e.name.endswith("barrier") for r in run for e in r.events if e.kind == "collective")
    if barriers:
        return f"every result is there, but the ranks called a barrier {barriers} times: fix it without"
    races = unordered(run, workdir)
    if races:
        return f"every result is there this time, but {race_words(races[0])}"
    order = ordering.order(run)
    mine = [a for a in accesses(run, workdir) if a.rank == 0]
    if not mine:
        return "rank 0 never touched results.csv: it owns the file"
    last = max(a.event.start for a in mine)
    for rank in range(1, run.world_size):
        setup, evaluate = race_results_file.delays(seed, rank)
        evaluated = run[rank].started + setup + evaluate
        if not order.ordered_at(rank, evaluated, 0, last):
            return (
                f"every line is there, but nothing orders rank {rank}'s evaluation (done at t={evaluated:.3f} s) "
                f"before rank 0's last use of the file (t={last:.3f} s): rank 0 wrote rank {rank}'s result "
                "without waiting for it. The work was skipped, not ordered: let each rank's result travel to "
                "rank 0 (gather, send/recv) or signal it (a store key)"
            )
    for rank in range(1, run.world_size):
        for e in run[rank].events:
            held_by = _may_wait_for_others(e, rank)
            if held_by:
                return (
                    f"every result is there, but rank {rank}'s {e.name} at line {e.line} can hold it for ranks other "
                    f"than rank 0 ({held_by}). Order only what needs ordering: who should own the file?"
                )
        polled = ordering.polls(run[rank].events)
        for source, target in order.edges_into(rank):
            if source[0] in (0, rank):
                continue
            e = order.event_at(target)
            if e.kind == "store" and e.name == "add" and id(e) not in polled:
                continue  # an add that counted another rank's add saw it; alone it never waits for anyone
            if e.kind == "sync":
                continue  # a file lock granted after another rank's hold: it waits only while that rank holds it
            if e.name == "gather_object":
                return (
                    f"every result is there, but rank {rank} waited for rank {source[0]} in gather_object at line "
                    f"{e.line}: gather_object first all_gathers the size of every rank's object, so every rank "
                    "waits for every rank. Send the results to rank 0 with dist.gather (a tensor), send/recv, "
                    "or signal with store keys."
                )
            return (
                f"every result is there, but rank {rank} waited for rank {source[0]} in {e.name} at line {e.line}: "
                "a call every rank must reach lines all ranks up like a barrier on gloo. Order only what needs "
                "ordering: who should own the file?"
            )
    return None
