"""attack14's repros (``attacks14/``: a new attacker given only the README, the docs and the source), each a script
that exits 0 when the promise it attacks holds and 1 when it breaks. Those fixed are run here: each exited 1
before its fix (see each script's docstring for what broke). a11 and a05 compare with plain torchrun, whose store
listens beyond loopback: they are checked here on barrierlab's side alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from repros import fixed_attacks

import barrierlab as bl

ROOT = Path(__file__).resolve().parent.parent
ATTACKS = ROOT / "attacks14"

FIXED = [
    "a01_race_through_symlink_missed",
    "a02_false_race_done_marker",
    "a03_false_race_stat_poll",
    "a06_races_backend_unvalidated",
    "a07_span_kind_checked_only_when_recording",
    "a10_exception_class_module_not_text",
    "a13_env_overrides_rank_and_marker",
    "a14_race_missed_os_truncate_rmdir",
    "a04_lint_star_import_missed",
    "a09_torch_file_system_shm_left",
    "a08_gloo_beyond_loopback_direct_pg",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)


def seed_and_threads() -> tuple[int, str | None]:
    return torch.initial_seed(), os.environ.get("OMP_NUM_THREADS")


def test_each_rank_seeds_torch_from_the_os_and_sees_omp_num_threads_as_under_torchrun():
    """a11: forked ranks shared the warm process's generator state (an unseeded draw was the same on every rank,
    unlike torchrun's fresh workers); a05: torchrun sets OMP_NUM_THREADS=1 when unset."""
    first, second = bl.run(seed_and_threads, 3), bl.run(seed_and_threads, 3)
    seeds = [seed for seed, _ in first.values + second.values]
    assert len(set(seeds)) == 6, seeds
    assert {threads for _, threads in first.values} == {"1"}, first.values
    mine = bl.run(seed_and_threads, 2, env={"OMP_NUM_THREADS": "2"})
    assert {threads for _, threads in mine.values} == {"2"}, mine.values  # the caller's env= wins, as in torchrun


def numpy_draw() -> int:
    import numpy as np

    return int(np.random.randint(1 << 30))


def test_each_rank_seeds_numpy_from_the_os_as_under_torchrun():
    """Corpus round 36 (mosaicml/streaming #145): once the warm process had imported numpy (its preload), every
    forked rank drew the same unseeded numpy values, so a per-rank random name that collides only by chance under
    torchrun always agreed here and the bug never showed. A fresh interpreter seeds numpy from the OS."""
    bl.warm_up(wait=True)  # numpy imported in the warm process, as after the preload between runs
    draws = bl.run(numpy_draw, 3).values + bl.run(numpy_draw, 3).values
    assert len(set(draws)) == 6, draws


def link_then_load(folder: str, how: str, order: str) -> int:
    """attack14 a01's twins: rank 0 writes a blob, renames it into place and links it into a snapshot folder
    (huggingface_hub's cache); the others read the snapshot path after a barrier, or after polling for it."""
    import time

    import torch.distributed as dist

    blob = os.path.join(folder, "blobs", "abc123")
    snap = os.path.join(folder, "snapshots", "main", "vocab.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)  # the others look first and miss (a find with no miss before it may be an older file)
        with open(blob + ".incomplete", "w") as f:
            f.write("hello world\n")
        os.replace(blob + ".incomplete", blob)
        getattr(os, how)(blob, snap)
    if order == "barrier":
        dist.barrier()
    else:
        while not os.path.exists(snap):
            time.sleep(0.01)
    with open(snap) as f:
        words = f.read().split()
    dist.barrier()
    return len(words)


@pytest.mark.parametrize("how", ["symlink", "link"])
@pytest.mark.parametrize("order", ["barrier", "poll"])
def test_a_file_linked_into_place_is_ordered_before_a_reader_by_a_barrier_or_by_finding_it(tmp_path, how, order):
    for name in ("blobs", "snapshots/main"):
        (tmp_path / name).mkdir(parents=True)
    run = bl.run(link_then_load, 3, args=(str(tmp_path), how, order), timeout=10)
    assert run.ok and run.values == [2, 2, 2], run
    assert run.races() == [], run.races()


def own_gloo_group_on_a_named_device() -> float:
    """attack14 a08's other door: a group of the rank's own on a device made for an interface by name."""
    from datetime import timedelta

    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    options = dist.ProcessGroupGloo._Options()
    options._timeout = timedelta(seconds=5)
    options._devices = [dist.ProcessGroupGloo.create_device(interface="eth0")]
    store = dist.PrefixStore("own-group", c10d._get_default_store())
    group = dist.ProcessGroupGloo(store, dist.get_rank(), dist.get_world_size(), options)
    t = torch.ones(1)
    group.allreduce([t]).wait()
    return t.item()


def test_a_gloo_device_made_for_another_interface_is_made_on_loopback_and_says_so():
    run = bl.run(own_gloo_group_on_a_named_device, 2, timeout=10)
    assert run.ok and run.values == [2.0, 2.0], run
    for rank in run:
        assert "[barrierlab] ProcessGroupGloo.create_device(interface='eth0') made on loopback" in rank.stderr, rank
