"""Notebook 07's check rejects the wrong fixes of the results-file races and passes the right ones."""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb07
from barrierlab.scenarios import race_results_file

HEADER = race_results_file.HEADER


def unsolved(workdir, seed=0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    if rank == 0:
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def _with_meeting(meet, workdir, seed=0):
    """The unsolved job with ``meet()`` after each of the first two phases (a barrier or a dummy collective)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
    meet()
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    meet()
    if rank == 0:
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def dummy_all_reduce():
    dist.all_reduce(torch.zeros(1))  # "not a barrier"


with_barriers = functools.partial(_with_meeting, dist.barrier)
with_dummy_all_reduce = functools.partial(_with_meeting, dummy_all_reduce)


def with_sleeps(workdir, seed=0):
    """Sleep instead of ordering: the appenders wait for the file, rank 0 waits for the appenders."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
    else:
        time.sleep(0.4)  # "long enough for rank 0 to create the file"
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    if rank == 0:
        time.sleep(1.0)  # "long enough for everyone to append"
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def only_rank0_writes_everything(workdir, seed=0):
    """Rank 0 writes every rank's line itself: no race, but it waits for nobody's result."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{round(0.9 + r / 100, 2)}" for r in range(world_size)]) + "\n")
        return f"{world_size} of {world_size} results"
    return rank


def one_writer_with_gather(workdir, seed=0):
    """The notebook's solution: results travel to rank 0 with dist.gather; rank 0 alone writes the file."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    time.sleep(evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    rows = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)] if rank == 0 else None
    dist.gather(torch.tensor([accuracy], dtype=torch.float64), rows, dst=0)
    if rank == 0:
        lines = [HEADER] + [f"{r},{round(t.item(), 2)}" for r, t in enumerate(rows)]
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
        return f"{world_size} of {world_size} results"
    return accuracy


def one_writer_with_reduce(workdir, seed=0):
    """attack13 a14: each rank puts its result in its own slot and a reduce to rank 0 sums them; gloo's reduce runs
    along a ring of all the ranks, so one late rank holds a non-root neighbour too (the check said nobody waited)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    time.sleep(evaluate_s)
    box = torch.zeros(world_size, dtype=torch.float64)
    box[rank] = round(0.9 + rank / 100, 2)
    dist.reduce(box, dst=0)
    if rank == 0:
        lines = [HEADER] + [f"{r},{round(v, 2)}" for r, v in enumerate(box.tolist())]
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
        return f"{world_size} of {world_size} results"
    return box[rank].item()


def one_writer_with_gather_to_the_default_root(workdir, seed=0):
    """review 14b: the solution with ``dst`` left out (torch 2.13: rank 0) was rejected as 'rank 0 wrote rank 1's
    result without waiting for it'."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    rows = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)] if rank == 0 else None
    dist.gather(torch.tensor([accuracy], dtype=torch.float64), rows)
    if rank == 0:
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{round(t.item(), 2)}" for r, t in enumerate(rows)]) + "\n")
        return f"{world_size} of {world_size} results"
    return accuracy


def one_writer_with_gather_then_broadcast(workdir, seed=0):
    """The solution plus a broadcast of the saved count (review 9b): gloo's broadcast holds rank 1 until its child
    rank 3 has entered, so a rank waited for another than rank 0."""
    rank = dist.get_rank()
    result = one_writer_with_gather(workdir, seed)
    done = torch.tensor([float(rank == 0)])
    dist.broadcast(done, src=0)
    return result


def one_writer_with_gather_object(workdir, seed=0):
    """Right order, but gather_object all_gathers the sizes first: every rank waits for every rank."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    rows = [None] * world_size if rank == 0 else None
    dist.gather_object(f"{rank},{accuracy}", rows, dst=0)
    if rank == 0:
        with open(path, "w") as f:
            f.write("\n".join([HEADER, *rows]) + "\n")
        return f"{world_size} of {world_size} results"
    return accuracy


def two_store_signals(workdir, seed=0):
    """The other right fix: rank 0 signals "file created", every rank signals "appended"."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
        store.set("created", "1")
    time.sleep(evaluate_s)
    store.wait(["created"], timedelta(seconds=5))
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    store.set(f"appended-{rank}", "1")
    if rank == 0:
        store.wait([f"appended-{r}" for r in range(world_size)], timedelta(seconds=5))
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def one_writer_with_send_recv(workdir, seed=0):
    """One writer fed by blocking send/recv: rank 0 receives every result in turn, then writes the file."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    if rank == 0:
        rows = [accuracy]
        for r in range(1, world_size):
            value = torch.zeros(1, dtype=torch.float64)
            dist.recv(value, src=r)
            rows.append(round(value.item(), 2))
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{a}" for r, a in enumerate(rows)]) + "\n")
        return f"{world_size} of {world_size} results"
    dist.send(torch.tensor([accuracy], dtype=torch.float64), dst=0)
    return accuracy


def one_writer_with_irecv_and_wait(workdir, seed=0):
    """Rank 0 posts every receive at once and waits on each handle; the others send and wait."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    if rank == 0:
        values = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)]
        works = [dist.irecv(values[r], src=r) for r in range(1, world_size)]
        for work in works:
            work.wait()
        rows = [accuracy] + [round(v.item(), 2) for v in values[1:]]
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{a}" for r, a in enumerate(rows)]) + "\n")
        return f"{world_size} of {world_size} results"
    dist.isend(torch.tensor([accuracy], dtype=torch.float64), dst=0).wait()
    return accuracy


def one_writer_with_gather_in_place(workdir, seed=0):
    """dist.gather to rank 0, which writes the file in place (nobody else touches it: no race)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    rows = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)] if rank == 0 else None
    dist.gather(torch.tensor([accuracy], dtype=torch.float64), rows, dst=0)
    if rank == 0:
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{round(t.item(), 2)}" for r, t in enumerate(rows)]) + "\n")
        return f"{world_size} of {world_size} results"
    return accuracy


def store_key_for_the_read_only(workdir, seed=0):
    """Fixes the read race with store keys, leaves the truncation race: appends are not ordered after "w"."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
    else:
        time.sleep(0.4)  # "long enough for rank 0 to create the file"
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    store.set(f"appended-{rank}", "1")
    if rank == 0:
        store.wait([f"appended-{r}" for r in range(world_size)], timedelta(seconds=5))
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def one_writer_with_all_gather(workdir, seed=0):
    """Right order, but all_gather makes every rank wait for every rank."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    rows = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)]
    dist.all_gather(rows, torch.tensor([accuracy], dtype=torch.float64))
    if rank == 0:
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{round(t.item(), 2)}" for r, t in enumerate(rows)]) + "\n")
        return f"{world_size} of {world_size} results"
    return accuracy


def one_writer_with_store_values(workdir, seed=0):
    """Each rank puts its result line in the store; rank 0 gets every key (get waits for it) and writes alone."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    store.set(f"result-{rank}", f"{rank},{accuracy}")
    if rank == 0:
        rows = [store.get(f"result-{r}").decode() for r in range(world_size)]
        with open(path, "w") as f:
            f.write("\n".join([HEADER, *rows]) + "\n")
        return f"{world_size} of {world_size} results"
    return accuracy


def status_key_polled_until_created(workdir, seed=0):
    """attack12 r7: rank 0 sets a status key to "starting", then to "created" once the header is written; every
    rank polls store.get until it reads "created", then appends; rank 0 waits for every append's key."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    if rank == 0:
        store.set("results", "starting")
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
        store.set("results", "created")
    time.sleep(evaluate_s)
    while store.get("results") != b"created":
        time.sleep(0.01)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    store.set(f"appended-{rank}", "1")
    if rank == 0:
        store.wait([f"appended-{r}" for r in range(world_size)], timedelta(seconds=5))
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def one_writer_with_send_object_list(workdir, seed=0):
    """Each rank sends its line as a Python object (send_object_list); rank 0 receives them in turn."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    if rank == 0:
        rows = [f"0,{accuracy}"]
        for r in range(1, world_size):
            box = [None]
            dist.recv_object_list(box, src=r)
            rows.append(box[0])
        with open(path, "w") as f:
            f.write("\n".join([HEADER, *rows]) + "\n")
        return f"{world_size} of {world_size} results"
    dist.send_object_list([f"{rank},{accuracy}"], dst=0)
    return accuracy


def appends_counted_in_the_store(workdir, seed=0):
    """Rank 0 creates the file and sets a key; every rank appends, then adds 1 to a counter; rank 0 reads the
    counter (add of 0, a common way to read one without blocking) until every rank has appended."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
        store.set("created", "1")
    time.sleep(evaluate_s)
    store.wait(["created"], timedelta(seconds=5))
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    store.add("appended", 1)
    if rank == 0:
        while store.add("appended", 0) < world_size:
            time.sleep(0.01)
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def appends_under_a_file_lock(workdir, seed=0):
    """appends_counted_in_the_store with each append under a FileLock: unneeded, but right. The ordering model
    orders one rank's hold before the next one's; a rank waits there only while another holds the lock, which
    lines nobody up (a check that took that order for a meeting refused this answer)."""
    from filelock import FileLock

    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.FileStore(os.path.join(workdir, "results.store"), world_size)
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
        store.set("created", "1")
    time.sleep(evaluate_s)
    store.wait(["created"], timedelta(seconds=5))
    with FileLock(os.path.join(workdir, "results.lock")), open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    store.add("appended", 1)
    if rank == 0:
        while store.add("appended", 0) < world_size:
            time.sleep(0.01)
        with open(path) as f:
            return f"{len(f.read().splitlines()[1:])} of {world_size} results"
    return rank


def polling_the_file(workdir, seed=0):
    """Poll instead of ordering: the others wait until the file exists, rank 0 until it has every line."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(HEADER + "\n")
    while not os.path.exists(path):  # a check of the clock, not an ordering edge
        time.sleep(0.01)
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{round(0.9 + rank / 100, 2)}\n")
    if rank == 0:
        while True:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
            if len(lines) == world_size:
                return f"{len(lines)} of {world_size} results"
            time.sleep(0.01)
    return rank


def one_writer_with_isend_never_waited(workdir, seed=0):
    """Results sent with isend that nobody waits for, rank 0's irecv handles never waited either: a sleep hides it."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s + evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    if rank == 0:
        values = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)]
        works = [dist.irecv(values[r], src=r) for r in range(1, world_size)]
        time.sleep(1.0)  # "long enough for every result to arrive"
        rows = [accuracy] + [round(v.item(), 2) for v in values[1:]]
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + [f"{r},{a}" for r, a in enumerate(rows)]) + "\n")
        for work in works:  # waited only after the file was written
            work.wait()
        return f"{world_size} of {world_size} results"
    work = dist.isend(torch.tensor([accuracy], dtype=torch.float64), dst=0)
    time.sleep(1.2)
    work.wait()
    return accuracy


WRONG = [
    (unsolved, "not yet"),
    (with_barriers, "barrier"),
    (with_dummy_all_reduce, "nothing orders them|all_reduce"),
    (with_sleeps, "nothing orders them"),
    (one_writer_with_gather_object, "gather_object first all_gathers"),
    (one_writer_with_gather_then_broadcast, "waited for rank"),
    (only_rank0_writes_everything, "skipped, not ordered"),
    (store_key_for_the_read_only, "nothing orders them"),
    (one_writer_with_all_gather, "lines all ranks up"),
    (one_writer_with_reduce, "reduces along a ring"),
    # a line can be lost (rank 0's header written over another's line, at offset 0): rank 0 then polls until the
    # deadline (seen in CI at load 5-10), another way the answer fails
    (polling_the_file, "nothing orders them|stopped at deadline"),
    (one_writer_with_isend_never_waited, "skipped, not ordered"),
]
RIGHT = [
    one_writer_with_gather,
    two_store_signals,
    one_writer_with_send_recv,
    one_writer_with_irecv_and_wait,
    one_writer_with_gather_in_place,
    one_writer_with_store_values,
    one_writer_with_send_object_list,
    appends_counted_in_the_store,
    one_writer_with_gather_to_the_default_root,
    appends_under_a_file_lock,
    status_key_polled_until_created,
]


@pytest.mark.parametrize("answer, says", WRONG)
def test_check_rejects_wrong_fixes(answer, says):
    feedback = nb07.check_results(answer)
    assert not feedback.passed, feedback.message
    assert feedback.message.startswith("✗"), feedback.message
    assert any(option in feedback.message for option in says.split("|")), feedback.message


@pytest.mark.parametrize("answer", RIGHT)
def test_check_passes_right_fixes(answer):
    feedback = nb07.check_results(answer)
    assert feedback.passed, feedback.message
    assert feedback.message.startswith("✓")


def _answer_to_part_1() -> str:
    """The folded answer to part 1 of notebook 07's exercise, as the learner reads it."""
    import nbformat  # here, not at the top: every rank imports this module (its answers are sent by reference),
    # and nbformat's jsonschema costs each rank 1.5-3 s of CPU

    path = next((Path(__file__).resolve().parent.parent / "notebooks").glob("07_*.ipynb"))
    cells = nbformat.read(path, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "markdown" and "Answer to part 1" in c.source)


def _seeds_named(text: str, phase: str) -> list[int]:
    """The seeds the answer names for a barrier after ``phase`` alone: '… after "setup" alone … (seeds 1 and 2)'."""
    found = re.search(rf'after "{phase}" alone[^(]*\(seeds ([0-9, and]+)\)', text)
    assert found, f"the answer names no seeds for a barrier after {phase!r} alone"
    return [int(n) for n in re.findall(r"\d+", found.group(1))]


def _failing_seeds(barrier_after) -> list[int]:
    failed = []
    for seed in range(1, 7):  # the notebook's SEEDS
        with tempfile.TemporaryDirectory() as workdir:
            run = bl.run(
                race_results_file.scenario,
                4,
                kwargs=dict(workdir=workdir, seed=seed, barrier_after=barrier_after),
                timeout=2,
            )
            if not nb07.results_complete(run, workdir):
                failed.append(seed)
    return failed


def test_the_bisection_answer_names_the_seeds_that_fail():
    """The answer to part 1 states which seeds still fail with one barrier; the seeds fix the delays, so
    real runs must fail on exactly those seeds, and on none with both barriers."""
    answer = _answer_to_part_1()
    for phase in ("setup", "evaluate"):
        assert _failing_seeds((phase,)) == _seeds_named(answer, phase), phase
    assert _failing_seeds(("setup", "evaluate")) == []
