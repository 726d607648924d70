"""A folder one rank makes and another rank writes into: the recorder sees ``os.mkdir`` (``os.makedirs``,
``Path.mkdir``), the ordering model orders it like a file, and a rank that raised because the folder was not
there yet is diagnosed from it. Real runs; the rank functions are modelled on deepspeedai/DeepSpeed PR #4536
(``engine.save_checkpoint``: only rank 0 makes ``save_dir``, "the following barrier ensures that other ranks are
not proceeding before dir is created") and on the code PrimeIntellect-ai/prime-rl PR #2699 started from
(every rank calls ``Path.mkdir(parents=True, exist_ok=True)`` before saving)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import torch.distributed as dist

import barrierlab as bl


def save_on_every_rank(folder: str, barrier: bool, rank0_late: float = 0.0, others_late: float = 0.0) -> None:
    """DeepSpeed's shape: rank 0 makes the checkpoint folder, every rank writes its own model states into it."""
    rank = dist.get_rank()
    save_dir = os.path.join(folder, "global_step3")
    if rank == 0:
        time.sleep(rank0_late)
        os.makedirs(save_dir, exist_ok=True)
    if barrier:
        dist.barrier()
    elif rank != 0:
        time.sleep(others_late)
    with open(os.path.join(save_dir, f"mp_rank_{rank:02d}_model_states.pt"), "w") as f:
        f.write("states")


def mkdir_on_every_rank(folder: str) -> None:
    """prime-rl's shape before PR #2699: each rank makes the folder itself, then writes into it."""
    rank = dist.get_rank()
    step_path = Path(folder) / "checkpoints" / "step_3"
    step_path.mkdir(parents=True, exist_ok=True)
    (step_path / f"rank_{rank}.pt").write_text("states")


def ddp_then_save(folder: str) -> None:
    """A DDP model (its collectives are torch's, not the learner's), then the unordered save of
    :func:`save_on_every_rank` in which rank 1 comes first and finds no folder."""
    import torch

    torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    save_on_every_rank(folder, barrier=False, rank0_late=1.0)


def _folder_races(run, folder):
    return [race for race in run.races() if race.made is not None and race.made.path.startswith(folder)]


def test_a_folder_rank_0_made_before_rank_1_wrote_into_it_by_timing_alone_is_a_race(tmp_path):
    run = bl.run(save_on_every_rank, 2, args=(str(tmp_path), False), kwargs={"others_late": 0.5}, timeout=10)
    assert run.ok, run
    races = _folder_races(run, str(tmp_path))
    assert races, run.races()
    text = str(races[0])
    assert "rank 0 makes the folder `global_step3`" in text and "rank 1's open for writing" in text, text
    assert "test_ordering_folders.py, line 27" in text and "line 32" in text, text


def test_the_barrier_after_rank_0_made_the_folder_orders_every_write_into_it(tmp_path):
    run = bl.run(save_on_every_rank, 2, args=(str(tmp_path), True), timeout=10)
    assert run.ok, run
    assert _folder_races(run, str(tmp_path)) == []
    assert any(event.name == "mkdir" for event in run[0].events if event.kind == "file")


def test_a_folder_every_rank_makes_itself_needs_no_order(tmp_path):
    run = bl.run(mkdir_on_every_rank, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    assert run.races() == []


def test_a_rank_that_raised_for_want_of_another_ranks_folder_leads_the_diagnosis(tmp_path):
    run = bl.run(ddp_then_save, 2, args=(str(tmp_path),), timeout=10)
    assert run.statuses == ["finished", "raised"], run
    diagnosis = run.diagnosis
    headline = diagnosis.headline
    assert headline.startswith("rank 1 raised FileNotFoundError"), headline
    assert "test_ordering_folders.py:32, in save_on_every_rank" in headline, headline
    assert "called from" in headline and "test_ordering_folders.py:50, in ddp_then_save" in headline, headline
    text = str(diagnosis)
    assert "rank 0 makes the folder `global_step3`" in text and "test_ordering_folders.py:27" in text, text
    assert "a barrier between them does" in text, text
    assert "after 0 collective" not in text, text
    assert re.search(r"after \d+ collectives \(0 from your own torch\.distributed calls, \d+ that torch", text), text


def lock_file_in_a_folder_that_is_already_there(folder: str) -> str:
    """attack11 a25's first half: every rank's makedirs(exist_ok=True) of a folder made before the run (what
    FileLock does for its lock file's folder), then rank 0 writes into it late. The folder was taken as made by
    each rank, and each 'made' raced with rank 0's write inside it."""
    os.makedirs(folder, exist_ok=True)
    if dist.get_rank() == 0:
        time.sleep(0.2)
        Path(folder, "rank0.txt").write_text("0")
    dist.barrier()
    return Path(folder, "rank0.txt").read_text()


def test_a_makedirs_of_a_folder_already_there_makes_nothing(tmp_path):
    run = bl.run(lock_file_in_a_folder_that_is_already_there, 3, args=(str(tmp_path),), timeout=10)
    assert run.ok and run.values == ["0"] * 3, run
    assert _folder_races(run, str(tmp_path)) == [] and run.races() == [], run.races()
    assert not [e for r in run for e in r.events if e.kind == "file" and e.name == "mkdir"]


def publish_a_folder_by_rename(folder, ordered):
    """attack12 r8: rank 0 writes ckpt.tmp/model.txt and publishes the folder by os.replace(ckpt.tmp, ckpt); rank 1
    reads ckpt/model.txt, after a barrier that follows the rename or (``ordered`` False) by timing alone."""
    import torch.distributed as dist

    tmp, final = os.path.join(folder, "ckpt.tmp"), os.path.join(folder, "ckpt")
    if dist.get_rank() == 0:
        os.makedirs(tmp)
        with open(os.path.join(tmp, "model.txt"), "w") as f:
            f.write("weights")
        os.replace(tmp, final)
    if ordered:
        dist.barrier()
    else:
        time.sleep(0.5)
    if dist.get_rank() == 1:
        with open(os.path.join(final, "model.txt")) as f:
            return f.read()
    return None


@pytest.mark.parametrize("ordered", [True, False])
def test_a_folder_renamed_into_place_changes_the_paths_inside_it(tmp_path, ordered):
    run = bl.run(publish_a_folder_by_rename, 2, args=(str(tmp_path), ordered), timeout=10)
    assert run.ok and run[1].value == "weights", run
    races = run.races()
    assert bool(races) is not ordered, races
    if races:
        assert "replaced `ckpt`" in str(races[0]) and "`model.txt`" in str(races[0]), str(races[0])
