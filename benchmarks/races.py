"""How often the ordering model names the race of each lesson's race scenario, and stays quiet on its fixes.

    python benchmarks/races.py [--runs 20]

Each case is a real 4-rank run (gloo) of a lesson's scenario; the model (``barrierlab.ordering.races``) must
name the racing pair (the two ranks' accesses of the named file) on a race, and find no race on a fix.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import timedelta

import torch.distributed as dist

import barrierlab as bl
from barrierlab import ordering
from barrierlab.scenarios import (
    checkpoint_delete_race,
    checkpoint_no_barrier_race,
    checkpoint_save_then_load,
    main_process_first_prepares_data,
    race_results_file,
    race_shared_file,
    rank0_prepares_data,
    rank0_prepares_data_race,
)


def shards_with_store_keys(workdir, seed=0):
    """07's fix with a store key per shard (as the notebook shows it)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "shards.store"), world_size)
    tokenize_s, write_s = race_shared_file.delays(seed, rank)
    lines = race_shared_file.tokenize(rank, tokenize_s)
    race_shared_file.write_shard(workdir, rank, lines, write_s)
    store.set(f"shard-{rank} written", "yes")
    if rank == 0:
        store.wait([f"shard-{r} written" for r in range(world_size)], timedelta(seconds=10))
        return race_shared_file.build_index(workdir, world_size)
    return len(lines)


#: (name, function, keyword arguments but the folder, folder argument, racing pair or None for a fix):
#: the pair is (file name, the changing access, the other access).
CASES = (
    (
        "01 race: rank 0 downloads, nobody waits",
        rank0_prepares_data_race.scenario,
        {},
        "folder",
        ("train.csv", "write", "read"),
    ),
    ("01 fix: barrier", rank0_prepares_data.scenario, {}, "folder", None),
    ("01 fix: main_process_first", main_process_first_prepares_data.scenario, {}, "folder", None),
    (
        "02 race: no barrier after the save",
        checkpoint_no_barrier_race.scenario,
        {},
        "directory",
        ("checkpoint.pt", "write", "read"),
    ),
    ("02 fix: save, barrier, load", checkpoint_save_then_load.scenario, {}, "directory", None),
    (
        "02 race: delete after own load",
        checkpoint_delete_race.scenario,
        {"sync": "none"},
        "directory",
        ("resume.pt", "remove", "read"),
    ),
    (
        "02 race: async all_reduce waited after the delete",
        checkpoint_delete_race.scenario,
        {"sync": "async all_reduce"},
        "directory",
        ("resume.pt", "remove", "read"),
    ),
    ("02 fix: barrier before the delete", checkpoint_delete_race.scenario, {"sync": "barrier"}, "directory", None),
    (
        "02 fix: blocking all_reduce before the delete",
        checkpoint_delete_race.scenario,
        {"sync": "all_reduce"},
        "directory",
        None,
    ),
    ("07 race: shards", race_shared_file.scenario, {"seed": 3}, "workdir", ("shard-1.txt", "write", "read")),
    (
        "07 fix: barrier after write",
        race_shared_file.scenario,
        {"seed": 3, "barrier_after": ("write",)},
        "workdir",
        None,
    ),
    ("07 fix: a store key per shard", shards_with_store_keys, {"seed": 3}, "workdir", None),
    ("07 race: results file", race_results_file.scenario, {"seed": 1}, "workdir", ("results.csv", "write", "append")),
    (
        "07 fix: barriers after setup and evaluate",
        race_results_file.scenario,
        {"seed": 1, "barrier_after": ("setup", "evaluate")},
        "workdir",
        None,
    ),
)


def judge(run, pair) -> bool:
    """The model's verdict is right: the named pair among the races, or no race on a fix."""
    found = ordering.races(run)
    if pair is None:
        return not found
    name, changing, other = pair
    return any(
        os.path.basename(r.first.path) == name and {r.first.how, r.second.how} == {changing, other} for r in found
    )


def one(case) -> bool:
    _, fn, kwargs, folder_argument, pair = case
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(fn, 4, kwargs={**kwargs, folder_argument: folder}, timeout=10, deadline=40)
    return judge(run, pair)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per case (default 20)")
    runs = parser.parse_args().runs
    bl.warm_up(wait=True)
    print(f"| case (4 ranks, gloo) | right verdicts of {runs} |")
    print("|---|---:|")
    for case in CASES:
        right = sum(one(case) for _ in range(runs))
        print(f"| {case[0]} | {right} |", flush=True)


if __name__ == "__main__":
    main()
