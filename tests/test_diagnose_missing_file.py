"""A rank that fails on a file that is not there: the diagnosis says what the record shows became of it.

Modelled on round 24 of the real-world corpus (Megatron-LM's checkpoint tracker with keep-last-N rotation;
mmcv's ``collect_results_cpu`` part files), where the line that raised is far from the cause."""

from __future__ import annotations

import os
import re
import shutil
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def rotation_deletes_what_rank1_loads(folder: str) -> None:
    rank = dist.get_rank()
    for step in range(3):
        os.makedirs(os.path.join(folder, f"step{step}"), exist_ok=True)
        torch.save({"step": step}, os.path.join(folder, f"step{step}", f"rank{rank}.pt"))
        dist.barrier()
        if rank == 0 and step >= 1:
            shutil.rmtree(os.path.join(folder, f"step{step - 1}"))  # keep the last one  # REMOVES
        dist.barrier()
    torch.load(os.path.join(folder, "step0" if rank == 1 else "step2", f"rank{rank}.pt"))  # rank 1: a stale step
    dist.barrier()


def parts_named_by_local_rank(folder: str) -> None:
    rank = dist.get_rank()
    local_rank = rank % 2  # two "nodes" of two ranks on one file system
    try:
        with open(os.path.join(folder, f"part_{local_rank}.txt"), "w") as f:  # WRITES
            f.write(str(rank))
        dist.barrier()
        if rank == 0:
            for i in range(dist.get_world_size()):
                with open(os.path.join(folder, f"part_{i}.txt")) as f:
                    f.read()
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(folder, ignore_errors=True)  # clean-up after the failure: no cause


def line_of(fn, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_a_file_removed_by_another_rank_is_named_with_the_removal(tmp_path):
    run = bl.run(rotation_deletes_what_rank1_loads, 2, args=(str(tmp_path),), timeout=5)
    assert [str(r.status) for r in run] != ["finished", "finished"], run
    text = str(run.diagnosis)
    line = line_of(rotation_deletes_what_rank1_loads, "# REMOVES")
    assert "rank 1 looked for" in text and "step0" in text, text
    assert "rank 0 had removed it at" in text and f":{line}" in text, text  # rmtree removes each file


def test_a_file_no_rank_wrote_is_named_with_what_they_wrote_instead(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    run = bl.run(parts_named_by_local_rank, 4, args=(str(folder),), timeout=5)
    text = str(run.diagnosis)
    line = line_of(parts_named_by_local_rank, "# WRITES")
    assert "part_2.txt, and no rank wrote it during the run" in text, text
    assert f":{line}" in text and "rank 2 part_0.txt" in text and "rank 3 part_1.txt" in text, text
    assert "had removed" not in text, text  # rank 0's clean-up came after it looked


def read_before_the_write(folder: str) -> None:
    path = os.path.join(folder, "x.txt")
    if dist.get_rank() == 0:
        import time

        time.sleep(0.3)  # the reader comes first
        with open(path, "w") as f:  # WRITES
            f.write("done")
    else:
        with open(path) as f:  # nothing orders this read after the write: no collective at all
            f.read()


def test_a_read_before_another_ranks_write_blames_the_missing_ordering_not_no_collective(tmp_path):
    # review53b M1: every rank made the same (no) collective calls, so the rule for a rank that raised by itself
    # said "so no collective is to blame. What to do: Read the traceback", though the record shows rank 0 wrote
    # the file after rank 1 looked (notebook 07 §1's own race told the same way)
    run = bl.run(read_before_the_write, 2, args=(str(tmp_path),), timeout=5)
    d = run.diagnosis
    assert d.headline.startswith("rank 1 raised FileNotFoundError"), d.headline
    assert "no collective is to blame" not in d.headline
    assert "nothing ordered its read after rank 0's write of the file" in d.headline, d.headline
    line = line_of(read_before_the_write, "# WRITES")
    assert any("before rank 0 wrote it at" in e and f":{line}" in e for e in d.evidence), d.evidence
    assert "barrier" in d.advice and "run.races()" in d.advice


def half_written_read(folder: str) -> None:
    import json
    import time

    path = os.path.join(folder, "infos.json")
    if dist.get_rank() == 1:
        with open(path, "w") as f:  # WRITES
            f.write('{"rows": ')
            f.flush()
            time.sleep(0.6)  # the reader comes in between
            f.write("3}")
    else:
        time.sleep(0.3)
        with open(path) as f:
            json.load(f)  # raises: half of it is there
    dist.barrier()


def test_a_rank_that_raised_reading_a_file_another_rank_was_writing_is_shown_the_unordered_write(tmp_path):
    # round 30's datasets item (huggingface/datasets PR #432): rank 0's json.load raised while rank 1 rewrote
    # the file, and the diagnosis named rank 0's line only
    run = bl.run(half_written_read, 2, args=(str(tmp_path),), timeout=5)
    assert run[0].status == bl.Status.RAISED and "JSONDecodeError" in run[0].error_message, run
    line = line_of(half_written_read, "# WRITES")
    found = [e for e in run.diagnosis.evidence if "last read before it raised was not ordered" in e]
    assert found and f"line {line}" in found[0] and "rank 1 opened it for writing" in found[0], run.diagnosis.evidence


def half_written_read_alone(folder: str) -> None:
    import json
    import time

    path = os.path.join(folder, "infos.json")
    if dist.get_rank() == 1:
        with open(path, "w") as f:
            f.write('{"rows": ')
            f.flush()
            time.sleep(0.6)
            f.write("3}")
    else:
        time.sleep(0.3)
        with open(path) as f:
            json.load(f)  # no collective at all: the rule for a rank that raised by itself


def test_a_half_written_read_with_no_collective_is_not_told_as_no_collective_to_blame(tmp_path):
    # review54 C4: "so no collective is to blame. Read the traceback", while run.races() listed the pair
    run = bl.run(half_written_read_alone, 2, args=(str(tmp_path),), timeout=5)
    d = run.diagnosis
    assert d.headline.startswith("rank 0 raised"), d.headline
    assert "no collective is to blame" not in d.headline and "half written" in d.headline, d.headline
    assert any("last read before it raised was not ordered" in e for e in d.evidence), d.evidence
    assert "barrier" in d.advice


def raises_a_json_error() -> None:
    import json

    json.loads('{"rows": ')


def test_an_exception_not_rebuilt_in_the_notebook_keeps_its_own_type_name():
    # attack27 a07: json.JSONDecodeError (it has its own __reduce__, so it is not rebuilt here) was shown as
    # "raised RuntimeError: JSONDecodeError: ..."
    from barrierlab.result import RaisedElsewhere

    run = bl.run(raises_a_json_error, 2, timeout=5)
    assert isinstance(run[0].exception, RaisedElsewhere) and isinstance(run[0].exception, RuntimeError)
    assert run[0].exception.type_name == "JSONDecodeError"
    assert run[0].error_message.startswith("JSONDecodeError: Expecting value"), run[0].error_message
    assert "raised JSONDecodeError" in run.diagnosis.headline and "RuntimeError" not in run.diagnosis.headline


def rank0_removes_the_checkpoint_while_rank1_loads(folder: str) -> None:
    """Modelled on round 32's post-localSGD item (pytorch#84886, torch's own test helper): rank 0 writes the
    checkpoint, a barrier, then rank 0 removes it in its clean-up while rank 1 is still about to load it."""
    path = os.path.join(folder, "checkpoint.pt")
    if dist.get_rank() == 0:
        torch.save({"step": 1}, path)
    dist.barrier()
    if dist.get_rank() == 0:
        os.remove(path)  # no barrier after the others' loads
    else:
        import time

        time.sleep(0.3)
        torch.load(path)
    dist.barrier()


def test_a_removal_nothing_ordered_after_the_read_is_told_as_a_file_hand_off(tmp_path):
    """corpus32: three file races were headlined "rank 1 failed by itself"; the unordered removal (or write)
    behind them was only in the evidence. The headline now says the rank failed on a file hand-off, and the
    advice orders it; a removal that a barrier did order (rotation_deletes_what_rank1_loads) stays the rank's
    own failure."""
    run = bl.run(rank0_removes_the_checkpoint_while_rank1_loads, 2, args=(str(tmp_path),), timeout=3, deadline=20)
    diagnosis = run.diagnosis
    assert diagnosis.headline.startswith(
        "rank 1 failed on a file hand-off (looked for a file rank 0 had removed, nothing ordering the two)"
    ), diagnosis
    assert diagnosis.advice.startswith("Order the hand-off on every rank: a barrier"), diagnosis.advice
    assert any("rank 0 had removed it at" in line for line in diagnosis.evidence), diagnosis
    (tmp_path / "ordered").mkdir()
    ordered = bl.run(rotation_deletes_what_rank1_loads, 2, args=(str(tmp_path / "ordered"),), timeout=3, deadline=20)
    assert "file hand-off" not in ordered.diagnosis.headline, ordered.diagnosis
    assert not ordered.diagnosis.advice.startswith("Order the hand-off"), ordered.diagnosis


def every_rank_reads_then_rank0_removes(folder: str) -> str:
    """review64b C2 (the capstone's second bug): the write is ordered before the reads by a barrier, the removal
    after them by nothing; rank 0 finishes, the others raise FileNotFoundError."""
    path = os.path.join(folder, "ck.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("x")
    dist.barrier()
    if dist.get_rank() != 0:
        time.sleep(0.3)
    with open(path) as f:
        data = f.read()
    if dist.get_rank() == 0:
        os.remove(path)  # REMOVES
    return data


def test_a_read_that_a_removal_beat_blames_the_unordered_removal_not_the_ordered_write(tmp_path):
    """It said "it may have read it half written; a barrier ... after the write is complete is missing", and
    advised the ordering the program already had."""
    run = bl.run(every_rank_reads_then_rank0_removes, 3, args=(str(tmp_path),), timeout=5, deadline=20)
    assert [r.status.value for r in run] == ["finished", "raised", "raised"], run
    d = run.diagnosis
    assert "nothing ordered their read of the file before rank 0's removal of it" in d.headline, d
    assert "half written" not in d.headline and "after the write" not in d.headline, d
    assert d.advice.startswith("Order the removal after every rank's use of the file"), d.advice


def each_rank_names_its_own_output_folder(folder: str) -> None:
    """Modelled on round 38's VLMEvalKit item (open-compass/VLMEvalKit #1540, PR #1546): each rank names the run's
    folder from its own clock, so rank 1's shard lands in another folder than the one rank 0 merges from (a name
    with the rank in it stands in for two clocks a second apart)."""
    rank = dist.get_rank()
    work = os.path.join(folder, f"T{rank}")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, f"{rank}_shard.txt"), "w") as f:  # WRITES
        f.write(str(rank))
    dist.barrier()
    if rank == 0:
        for r in range(dist.get_world_size()):
            with open(os.path.join(work, f"{r}_shard.txt")) as f:
                f.read()


def test_a_file_of_the_same_name_written_in_another_folder_is_named(tmp_path):
    run = bl.run(each_rank_names_its_own_output_folder, 2, args=(str(tmp_path),), timeout=5, deadline=20)
    assert run.statuses[0] == "raised", run
    said = "\n".join(run.diagnosis.evidence)
    assert f"rank 1 wrote {tmp_path}/T1/1_shard.txt at" in said, said
    assert "the ranks built different paths for it" in said, said


def rank1_loads_before_rank0_renames_the_folder(folder: str) -> None:
    """Modelled on round 33's OLMo item (allenai/OLMo PR #234): each rank saves into ``step0-tmp``, a barrier, then
    rank 0 alone renames the folder to ``step0`` while rank 1 already loads ``step0/rank1.pt``."""
    import time
    from pathlib import Path

    tmp, final = Path(folder, "step0-tmp"), Path(folder, "step0")
    if dist.get_rank() == 0:
        tmp.mkdir()
    dist.barrier()
    torch.save({"rank": dist.get_rank()}, tmp / f"rank{dist.get_rank()}.pt")
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.3)
        tmp.replace(final)
    torch.load(final / f"rank{dist.get_rank()}.pt")
    dist.barrier()


def test_a_folder_renamed_into_place_after_the_look_is_the_missing_ordering(tmp_path):
    """corpus33: rank 1 was said to have looked for a file "no rank wrote during the run": rank 0 renamed its
    folder into place after the look."""
    run = bl.run(rank1_loads_before_rank0_renames_the_folder, 2, args=(str(tmp_path),), timeout=3, deadline=20)
    diagnosis = run.diagnosis
    assert "rank 1 failed on a file hand-off (read a file before rank 0 renamed its folder into place)" in (
        diagnosis.headline
    ), diagnosis
    assert any("before rank 0 renamed its folder to" in line for line in diagnosis.evidence), diagnosis
    assert not any("no rank wrote it during the run" in line for line in diagnosis.evidence), diagnosis


def make_the_cache_folder(folder, same_rank_twice=False):
    """Project-MONAI/MONAI #2374, as corpus round 33 modelled it: every rank checks that the cache folder is
    missing, then makes it; the second rank to make it raises FileExistsError. With ``same_rank_twice``, rank 0
    makes it twice (its own earlier make is the cause: no other rank's)."""
    import torch.distributed as dist

    path = os.path.join(folder, "cache")
    rank = dist.get_rank()
    if same_rank_twice:
        if rank == 0:
            os.mkdir(path)
            os.mkdir(path)
    elif not os.path.exists(path):
        time.sleep(0.2 * (rank + 1))
        os.mkdir(path)
    dist.barrier()


def test_a_rank_that_makes_a_folder_another_rank_made_first_is_not_told_it_failed_by_itself(tmp_path):
    run = bl.run(make_the_cache_folder, 2, args=(str(tmp_path),))
    assert run.statuses == ["raised", "raised"], run
    d = run.diagnosis
    assert d.headline.startswith("rank 1 failed to make a path that rank 0 had made first"), d.headline
    assert any(f"rank 1 tried to make {tmp_path}/cache, which rank 0 had made first at" in e for e in d.evidence), d
    assert "exist_ok=True" in d.advice, d.advice


def test_a_rank_that_makes_its_own_folder_twice_failed_by_itself(tmp_path):
    run = bl.run(make_the_cache_folder, 2, args=(str(tmp_path), True))
    assert run[0].status == "raised", run
    assert run.diagnosis.headline.startswith("rank 0 failed by itself"), run.diagnosis.headline


def save_into_the_checkpoint_folder(folder):
    """huggingface/transformers #11618, as corpus round 36 modelled it: rank 0 makes the checkpoint folder (after
    slow work of its own), every rank saves its RNG state into it; rank 1 gets there first."""
    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint-2")
    if dist.get_rank() == 0:
        time.sleep(0.4)
        os.makedirs(path, exist_ok=True)
    torch.save({"step": 2}, os.path.join(path, f"rng_state_{dist.get_rank()}.pth"))
    dist.barrier()


def test_a_save_into_a_folder_another_rank_makes_later_names_both(tmp_path):
    run = bl.run(save_into_the_checkpoint_folder, 2, args=(str(tmp_path),))
    assert run[1].status == "raised", run
    d = run.diagnosis
    assert "rank 1 failed on a file hand-off (used a folder before rank 0 made it)" in d.headline, d.headline
    assert any("rank 1 used the folder" in e and "before rank 0 made it at" in e for e in d.evidence), d.evidence


def _mtime_on_a_slow_shared_fs(path) -> float:
    """capi's sort key: one metadata round trip per stat. Rank 1's trips are slow: its first answer comes after
    rank 0 has removed the oldest checkpoint (polled, so the order does not depend on the machine's load)."""
    if dist.get_rank() == 1:
        oldest = path.parent / "model_0.pth"
        deadline = time.monotonic() + 30
        while oldest.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return path.stat().st_mtime


def _capi_eval_model(ckpt_dir) -> None:
    listed = list(ckpt_dir.glob("*.pth"))  # every rank lists the checkpoints
    dist.barrier()
    for ckpt in sorted(listed, key=_mtime_on_a_slow_shared_fs)[:-1]:  # SORTS
        if dist.get_rank() == 0:
            ckpt.unlink()


def capi_checkpoint_cleanup_listed_on_every_rank(folder: str) -> None:
    """Round 44's capi item (facebookresearch/capi issue #9): every rank lists and stats the checkpoints to sort
    them, rank 0 alone deletes them; rank 1 raises FileNotFoundError in the sort key, two calls below the rank's
    own function."""
    from pathlib import Path

    ckpt_dir = Path(folder)
    if dist.get_rank() == 0:
        for i in range(3):
            torch.save({"iteration": i}, ckpt_dir / f"model_{i}.pth")
            time.sleep(0.01)
    dist.barrier()
    _capi_eval_model(ckpt_dir)


def test_a_raise_in_a_sort_key_names_the_line_that_sorts(tmp_path):
    """Round 44's capi item under bl.run: the headline said "at ...:48, in mtime_on_shared_fs ..., reached from
    ...:112, in worker ... through 1 more call" and no text named line 98, the listing sorted by the key (the bug);
    the CLI named it only because it prints the rank's traceback. The learner's chain is now in the evidence."""
    run = bl.run(capi_checkpoint_cleanup_listed_on_every_rank, 2, args=(str(tmp_path),), timeout=10, deadline=60)
    assert run[1].status == "raised" and "FileNotFoundError" in run[1].error_message, run
    text = str(run.diagnosis)
    sorts = line_of(_capi_eval_model, "# SORTS")
    assert "rank 1 raised in its own code:" in text, text
    assert f"test_diagnose_missing_file.py:{sorts}, in _capi_eval_model" in text, text


def _wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _build_visualize(out: str, log: str) -> int:
    """A stand-in for PufferDrive's ``build_ocean.sh``: write the binary in two parts, then the link step checks
    its size and writes its log. Rank 0's second part waits until another build has replaced the file at
    ``out`` (polled, so the order does not depend on the machine's load); rank 1's until rank 0's link step
    logged."""
    rank = dist.get_rank()
    with open(out, "wb") as f:
        f.write(b"\x7fELF")
        f.flush()
        if rank == 0:
            _wait_for(lambda: os.path.exists(out) and os.stat(out).st_ino != os.fstat(f.fileno()).st_ino)
        else:
            _wait_for(lambda: os.path.exists(log))
        f.write(bytes(12))
    size = os.path.getsize(out)
    with open(log, "a") as f:
        f.write(f"rank {rank}: {size} bytes\n")
    return 0 if size == 16 else 1


def _ensure_drive_binary(workdir: str) -> None:
    path, log = os.path.join(workdir, "visualize"), os.path.join(workdir, "link.log")
    if dist.get_rank() == 1:
        _wait_for(lambda: os.path.exists(path))  # rank 1's first reset loads its map shard longer
    if os.path.exists(path):
        os.remove(path)  # REBUILDS
    if _build_visualize(path, log) != 0:
        raise RuntimeError("Failed to build visualize binary for rendering")


def pufferdrive_visualize_rebuilt_by_every_rank(workdir: str) -> None:
    """Round 43's PufferDrive item (Emerge-Lab/PufferDrive issue #281): every rank deletes and rebuilds the same
    ``./visualize``; rank 1 removes rank 0's half-written binary and writes its own, rank 0's link step finds the
    wrong file and raises RuntimeError; rank 1 goes on to the gradient all_reduce."""
    dist.barrier()
    _ensure_drive_binary(workdir)
    dist.all_reduce(torch.ones(3))


def test_a_rank_whose_file_another_rank_replaced_during_the_call_that_raised_is_told_the_hand_off(tmp_path):
    """Round 43's PufferDrive item: "rank 0 failed by itself (raised at ...: raise RuntimeError(...))"; the record
    held the race (rank 1 removed `visualize` while rank 0 was building it), but only a rank's last read was
    looked at, and rank 0 had read nothing."""
    run = bl.run(pufferdrive_visualize_rebuilt_by_every_rank, 2, args=(str(tmp_path),), timeout=10, deadline=60)
    d = run.diagnosis
    assert run[0].status == "raised" and "Failed to build visualize" in run[0].error_message, run
    assert d.headline.startswith(
        "rank 0 failed on a file hand-off (used a file another rank was changing, nothing ordering the two)"
    ), d.headline
    line = line_of(_ensure_drive_binary, "# REBUILDS")
    assert any(
        e.startswith("rank 0's use of a file in the call that raised")
        and re.search(rf"rank 1 removed (it|`visualize`) at test_diagnose_missing_file\.py, line {line} ", e)
        for e in d.evidence
    ), d
    assert d.advice.startswith("Order the hand-off on every rank"), d.advice
