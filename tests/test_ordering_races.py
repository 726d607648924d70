"""The ordering model on the lessons' race scenarios, from real runs: it names the racing pair of each race
and finds none on each fix (3 runs each; benchmarks/races.py runs 20)."""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
import time

import pytest

import barrierlab as bl
from barrierlab import ordering

_spec = importlib.util.spec_from_file_location(
    "races_cases", os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "races.py")
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


@pytest.mark.parametrize("case", cases.CASES, ids=[c[0] for c in cases.CASES])
def test_the_model_names_each_race_and_passes_each_fix(case):
    verdicts = [cases.one(case) for _ in range(3)]
    assert all(verdicts), f"{case[0]}: {verdicts}"


def test_a_blocking_all_reduce_orders_the_delete_on_gloo_but_not_on_nccl(tmp_path):
    run = bl.run(
        cases.checkpoint_delete_race.scenario, 4, kwargs={"directory": str(tmp_path), "sync": "all_reduce"}, timeout=10
    )
    assert run.ok
    assert ordering.races(run, "gloo") == []
    lost = ordering.lost_on_nccl(run)
    assert {(a.how, b.how) for a, b in lost} <= {("read", "remove"), ("remove", "read")} and len(lost) == 3


def handoff_through_a_rooted_call_that_names_no_root(folder, how):
    """Rank 0 writes a file, then a rooted call whose root is left out (torch 2.13 makes it rank 0), then every
    rank reads the file (review 14b: the model found no root and reported 3 races)."""
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(folder, "shared.txt")
    if rank == 0:
        time.sleep(0.2)
        with open(path, "w") as f:
            f.write("ready")
    if how == "broadcast_object_list":
        dist.broadcast_object_list([None])
    elif how == "scatter_object_list":
        dist.scatter_object_list([None], [rank] * world if rank == 0 else None)
    elif how == "gather_object":  # every rank waits for every rank's size first (its inner all_gather)
        dist.gather_object(rank, [None] * world if rank == 0 else None)
    elif how == "scatter":
        dist.scatter(torch.zeros(1), [torch.ones(1)] * world if rank == 0 else None)
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize("how", ["broadcast_object_list", "scatter_object_list", "gather_object", "scatter"])
def test_a_rooted_call_that_names_no_root_has_rank_0_as_its_root(tmp_path, how):
    run = bl.run(handoff_through_a_rooted_call_that_names_no_root, 3, args=(str(tmp_path), how), timeout=10)
    assert run.ok and run.values == ["ready"] * 3, run
    assert ordering.races(run) == [], ordering.races(run)


def handoff_through_an_async_all_reduce(folder, how):
    """Rank 0 writes a file, then every rank waits for an async all_reduce through its future (attack11 a17:
    wait_all, then() and collect_all were reported as never waited for, with a race each), then reads it."""
    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "shared.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("ready")
    t = torch.ones(1)
    future = dist.all_reduce(t, async_op=True).get_future()
    own = torch.futures.Future()  # not a torch.distributed call's: its waits are no waits of the all_reduce
    own.set_result(None)
    if how == "wait_all":
        torch.futures.wait_all([own, future])
    elif how == "then":
        t = future.then(lambda done: done.value()[0] / dist.get_world_size()).wait()
    elif how == "collect_all":
        torch.futures.collect_all([future, own]).wait()
    elif how == "own future only":
        torch.futures.wait_all([own])
        time.sleep(0.3)
    with open(path) as f:
        return f.read(), float(t.sum())


@pytest.mark.parametrize("how", ["wait_all", "then", "collect_all", "own future only"])
def test_an_async_call_waited_for_through_a_chained_or_collected_future_orders_the_read(tmp_path, how):
    from barrierlab import diagnose

    run = bl.run(handoff_through_an_async_all_reduce, 3, args=(str(tmp_path), how), timeout=10)
    assert run.ok, run
    # (the then() callback's own wait, recorded as it runs on torch's thread, is not the rank's: attack18 a15)
    waits = [[e.of for e in rank.events if e.kind == "wait" and e.name != "Future.then"] for rank in run]
    hazards, races = diagnose.call_hazards(run), ordering.races(run)
    if how == "own future only":
        assert waits == [[], [], []] and len(races) == 2 and "never waited" in hazards[0], (waits, races, hazards)
    else:
        assert all(len(w) == 1 for w in waits) and races == [] and hazards == [], (waits, races, hazards)


def handoff_through_batch_isend_irecv(folder, wait):
    """Rank 0 writes a file, then each rank sends to the next and receives from the one before in one
    dist.batch_isend_irecv (the pipeline-parallel idiom), waits for its requests (or sleeps), and rank 1 reads
    the file (attack11 a12: the batch's sends and receives were unknown to the model, its Works unrecorded)."""
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(folder, "activations.txt")
    if rank == 0:
        with open(path, "w") as f:
            f.write("x")
    sent, received = torch.full((1,), float(rank)), torch.zeros(1)
    requests = dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, sent, (rank + 1) % world), dist.P2POp(dist.irecv, received, (rank - 1) % world)]
    )
    if wait:
        for request in requests:
            request.wait()
    else:
        time.sleep(0.3)
    if rank == 1:
        with open(path) as f:
            f.read()
    return received.item() if wait else None


@pytest.mark.parametrize("wait", [True, False])
def test_the_sends_and_receives_of_batch_isend_irecv_pair_like_isend_and_irecv(tmp_path, wait):
    run = bl.run(handoff_through_batch_isend_irecv, 3, args=(str(tmp_path), wait), timeout=10)
    assert run.ok, run
    p2p = [[(e.name, e.peer) for e in rank.events if e.kind == "p2p"] for rank in run]
    assert p2p == [[("isend", {"dst": (r + 1) % 3}), ("irecv", {"src": (r - 1) % 3})] for r in range(3)], p2p
    races = ordering.races(run)
    if wait:
        assert run.values == [2.0, 0.0, 1.0] and races == [], races
    else:  # a request never waited for orders nothing
        assert [(r.first.rank, r.second.rank) for r in races] == [(0, 1)], races


def publish_then_wait_for_it(folder, atomic, how):
    """Rank 1 writes a checkpoint, in place or to a temporary name it then os.replace()s; rank 0 waits for it to
    appear (an os.path.exists poll, or retried opens) or sleeps, then reads it. Notebook 07 teaches that a file
    published by os.replace is complete once it exists; the model reported its poll as a race (review 14b)."""
    import torch.distributed as dist

    path = os.path.join(folder, "ckpt.txt")
    if dist.get_rank() == 1:
        time.sleep(0.3)
        target = path + ".tmp" if atomic else path
        with open(target, "w") as f:
            f.write("weights")
        if atomic:
            os.replace(target, path)
        return None
    if how == "exists":
        while not os.path.exists(path):
            time.sleep(0.005)
    elif how == "open":
        while True:
            try:
                with open(path) as f:
                    return f.read()
            except FileNotFoundError:
                time.sleep(0.005)
    else:
        time.sleep(0.6)
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize(
    "atomic, how, ordered",
    [(True, "exists", True), (True, "open", True), (True, "sleep", False), (False, "exists", False)],
)
def test_a_rank_that_waits_for_a_file_published_by_a_rename_is_ordered_after_it(tmp_path, atomic, how, ordered):
    """Only a wait for a file that a rename published orders the read: a file written in place may be found
    half-written, and a sleep waits for nothing."""
    run = bl.run(publish_then_wait_for_it, 2, args=(str(tmp_path), atomic, how), timeout=10)
    assert run.ok, run
    assert (ordering.races(run) == []) is ordered, ordering.races(run)
    looks = [e for e in run[0].events if e.kind == "file" and e.name == "exists"]
    assert len(looks) <= 2, looks  # a poll is recorded when its answer changes, not once a turn


def handoff_through_an_empty_all_reduce(folder, empty):
    """attack11 a15: gloo returns at once from an all_reduce of an empty tensor, so it orders nothing."""
    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "stats.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("done")
    dist.all_reduce(torch.empty(0) if empty else torch.zeros(1))
    if dist.get_rank() == 1:
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return "missing"
    return None


@pytest.mark.parametrize("empty", [True, False])
def test_an_all_reduce_of_an_empty_tensor_orders_nothing_on_gloo(tmp_path, empty):
    run = bl.run(handoff_through_an_empty_all_reduce, 2, args=(str(tmp_path), empty), timeout=10)
    assert run.ok, run
    assert run[1].value == ("missing" if empty else "done")  # what gloo did
    assert bool(ordering.races(run)) is empty, ordering.races(run)


def handoff_through_an_empty_collective(folder, kind):
    """attack12 r2: gloo returns at once from these collectives of empty tensors too (reduce: at its root)."""
    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "stats.txt")
    if dist.get_rank() == 1:
        time.sleep(0.5)
        with open(path, "w") as f:
            f.write("done")
    empty = torch.empty(0)
    if kind == "all_gather_into_tensor":
        dist.all_gather_into_tensor(torch.empty(0), empty)
    elif kind == "reduce_scatter_tensor":
        dist.reduce_scatter_tensor(torch.empty(0), empty)
    elif kind == "all_reduce_coalesced":
        dist.all_reduce_coalesced([empty])
    else:
        dist.reduce(empty, dst=0)
    if dist.get_rank() == 0:
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return "missing"
    return None


@pytest.mark.parametrize("kind", ["all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce_coalesced", "reduce"])
def test_more_collectives_of_empty_tensors_order_nothing_on_gloo(tmp_path, kind):
    run = bl.run(handoff_through_an_empty_collective, 2, args=(str(tmp_path), kind), timeout=10)
    assert run.ok, run
    assert run[0].value == "missing", run.values  # what gloo did: rank 0 read before rank 1 wrote
    assert ordering.races(run), kind


def object_broadcast_after_every_rank_wrote(folder):
    """attack12 r1: at 8 ranks the root of broadcast_object_list leaves before a leaf of gloo's tree enters."""
    import torch.distributed as dist

    rank = dist.get_rank()
    if rank == 7:
        time.sleep(1.0)
    with open(os.path.join(folder, f"shard{rank}.txt"), "w") as f:
        f.write(str(rank))
    config = [{"lr": 0.1}] if rank == 0 else [None]
    dist.broadcast_object_list(config, src=0)
    found = None
    if rank == 0:
        try:
            with open(os.path.join(folder, "shard7.txt")) as f:
                found = f.read()
        except FileNotFoundError:
            found = "missing"
    dist.barrier()
    return found


def test_an_object_broadcasts_root_waits_two_levels_of_the_tree_at_8_ranks(tmp_path):
    run = bl.run(object_broadcast_after_every_rank_wrote, 8, args=(str(tmp_path),), timeout=20, deadline=60)
    assert run.ok, run
    races = [str(race) for race in ordering.races(run) if "shard7" in str(race)]
    if run[0].value == "missing":  # gloo let the root go before rank 7 entered: the model must not order them
        assert races, run.values
    order = ordering.order(run)
    near = {1, 2, 4, 3, 5, 6}  # rank 0's children and grandchildren in gloo's tree of 8
    root_call = next(e for e in run[0].events if e.name == "broadcast_object_list")
    for other in range(1, 8):
        call = next(e for e in run[other].events if e.name == "broadcast_object_list")
        assert order.before(order.enter(other, call), order.leave(0, root_call)) is (other in near), other


def test_a_race_is_told_in_words_with_both_lines(tmp_path):
    run = bl.run(cases.rank0_prepares_data_race.scenario, 4, kwargs={"folder": str(tmp_path)}, timeout=10)
    text = str(ordering.races(run)[0])
    assert "train.csv" in text and "rank 0" in text and "line 17" in text and "nothing orders them on gloo" in text


def test_a_race_is_told_from_the_ranks_start_and_says_when_the_write_was_already_over():
    """A read after a sleep: the write was over, by the clock only; times count from the ranks' start."""

    def write_then_read(folder):
        import time

        import torch.distributed as dist

        path = os.path.join(folder, "data.txt")
        if dist.get_rank() == 0:
            with open(path, "w") as f:
                f.write("ready")
        else:
            time.sleep(0.3)
            with open(path) as f:
                return f.read()

    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(write_then_read, 2, args=(folder,))
    assert run.ok, run
    (race,) = run.races()
    text = str(race)
    assert (
        "rank 1 read `data.txt`" in text and "after rank 0 opened it for writing" in text and "timing alone" in text
    ), text
    times = [float(t) for t in re.findall(r"t=(\d+\.\d+) s", text)]
    assert len(times) == 2 and all(0 <= t < 5 for t in times), text  # from the ranks' start, not the launch


def write_and_list_a_shared_folder(folder, files):
    """attack10 a10: each rank writes files into one shared folder and lists it after each write."""
    import torch.distributed as dist

    rank = dist.get_rank()
    for i in range(files):
        with open(os.path.join(folder, f"r{rank}-{i}.txt"), "w") as f:
            f.write("x")
        os.listdir(folder)
    dist.barrier()


@pytest.mark.timeout(300)
def test_many_listings_of_a_shared_folder_are_checked_in_seconds(tmp_path):
    """1,000 files and 1,000 listings of their folder. Joining each listing to the folder's entries by scanning
    every path and comparing accesses by value grew with the cube of the files: at 150 files per rank the
    diagnosis of this finished run took 15-105 s on the 2-core machine, 3.9 s after; at 250, 11 s after. The
    bound is generous, for a busy machine."""
    import time

    run = bl.run(write_and_list_a_shared_folder, 4, args=(str(tmp_path), 250), deadline=120)
    assert run.ok, run
    started = time.monotonic()
    headline = run.diagnosis.headline
    assert time.monotonic() - started < 60, headline
    # 750,000 pairs race (each listing against each other rank's files); the list stops at MAX_RACES (attack15 a07)
    assert "at least 1000 pairs of file accesses raced" in headline, headline


def read_after_a_removal(folder):
    """review15b: rank 0 writes and removes a file; rank 1, later by the clock alone, tries to read it."""
    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.pt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("state")
        os.remove(path)
    else:
        time.sleep(0.3)
        try:
            open(path).close()
        except FileNotFoundError:
            return "gone"
    return "done"


def test_a_read_that_found_no_file_after_a_removal_says_it_was_already_removed(tmp_path):
    run = bl.run(read_after_a_removal, 2, args=(str(tmp_path),))
    assert run.values == ["done", "gone"], run
    texts = [str(race) for race in run.races() if race.second.how == "read"]
    assert texts and "tried to read `checkpoint.pt` (already removed)" in texts[0], texts
    assert "no file yet" not in texts[0], texts


def read_after_a_replace_and_a_removal(folder):
    """review51b: rank 0 replaces a checkpoint, then removes it; rank 1, later by the clock alone, finds none."""
    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.pt")
    if dist.get_rank() == 0:
        with open(path + ".tmp", "w") as f:
            f.write("state")
        os.replace(path + ".tmp", path)
        time.sleep(0.05)
        os.remove(path)
    else:
        time.sleep(0.4)
        try:
            open(path).close()
        except FileNotFoundError:
            return "gone"
    return "done"


def test_a_read_that_found_the_file_removed_is_not_told_after_the_replace(tmp_path):
    """The replace came first and left the file there: the read's race with it must not read as its cause."""
    run = bl.run(read_after_a_replace_and_a_removal, 2, args=(str(tmp_path),))
    assert run.values == ["done", "gone"], run
    texts = {race.first.event.name: str(race) for race in run.races() if race.second.how == "read"}
    assert "after rank 0 removed it" in texts["remove"], texts
    replaced = texts["rename"]
    assert "after rank 0 replaced" not in replaced, replaced
    assert "(already removed) at" in replaced and "; rank 0 replaced `checkpoint.pt` earlier, at" in replaced, replaced
    assert "nothing orders that before the read on gloo" in replaced, replaced


def resume_if_a_checkpoint_is_there(folder, sync):
    """Rank 0 saves a checkpoint; rank 1 decides from ``os.path.exists`` whether to resume and never opens the
    file: its look is the only access, and its answer depends on timing unless something orders it after the
    save (an elastic resume that looks for the previous attempt's file, modelled on pytorch/elastic's imagenet
    example's ``load_checkpoint``)."""
    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.pt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("weights")
    if sync:
        dist.barrier()
    if dist.get_rank() == 1:
        return "resume" if os.path.exists(path) else "fresh"
    return None


@pytest.mark.parametrize("sync", [False, True])
def test_a_look_whose_answer_decides_alone_races_with_the_write_it_may_miss(tmp_path, sync):
    run = bl.run(resume_if_a_checkpoint_is_there, 2, args=(str(tmp_path), sync), timeout=10)
    assert run.ok, run
    assert run.values[1] == ("resume" if sync else "fresh"), run.values
    races = run.races()
    if sync:
        assert races == [], races
        return
    assert len(races) == 1, races
    text = str(races[0])
    assert "rank 0 opened `checkpoint.pt` for writing" in text and "rank 1 looked for it (not there yet)" in text, text
    assert text.endswith("after the write and before the look would order it before the look"), text


def wait_for_a_file_then_read_it(folder):
    """Rank 1 polls ``os.path.exists`` until rank 0's file (written in place) is there, then reads it: the read
    races with the write (the file may be half-written); the looks before it add no race of their own."""
    import torch.distributed as dist

    path = os.path.join(folder, "done.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("done")
        return None
    while not os.path.exists(path):
        time.sleep(0.005)
    with open(path) as f:
        return f.read()


def test_looks_followed_by_a_read_of_the_same_path_are_told_once_by_the_read(tmp_path):
    run = bl.run(wait_for_a_file_then_read_it, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    races = run.races()
    assert [(r.first.how, r.second.how) for r in races] == [("write", "read")], [str(r) for r in races]


def publish_then_mark(folder, marker, marker_first):
    """Rank 0 publishes a file whole, then makes a DONE marker (an empty file, or a folder made with os.mkdir);
    the others poll for the marker (``exists``, ``isdir``, ``os.stat``), then read the file (attack14 a02/a03:
    a false race). ``marker_first``: the marker is made before the file is written — a real race."""
    import torch.distributed as dist

    data, done = os.path.join(folder, "vocab.txt"), os.path.join(folder, "DONE")

    def mark():
        if marker == "file":
            open(done, "w").close()
        else:
            os.mkdir(done)

    if dist.get_rank() == 0:
        time.sleep(0.3)
        if marker_first:
            mark()
        with open(data + ".tmp", "w") as f:
            f.write("<pad> <unk> the")
        os.replace(data + ".tmp", data)
        if not marker_first:
            mark()
        return None
    while True:
        try:
            if marker == "file" and os.path.exists(done) or marker == "folder" and os.path.isdir(done):
                break
            if marker == "stat":
                os.stat(done)
                break
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    try:
        with open(data) as f:
            return f.read()
    except FileNotFoundError:
        return "missing"


@pytest.mark.parametrize("marker", ["file", "folder", "stat"])
def test_a_done_marker_made_after_the_publish_orders_the_read_and_one_made_before_races(tmp_path, marker):
    """("stat": the marker is a folder, polled with os.stat.)"""
    run = bl.run(publish_then_mark, 3, args=(str(tmp_path), marker, False), timeout=10)
    assert run.ok, run
    assert run.races() == [], run.races()
    for path in tmp_path.iterdir():
        path.rmdir() if path.is_dir() else path.unlink()
    early = bl.run(publish_then_mark, 3, args=(str(tmp_path), marker, True), timeout=10)
    assert early.ok, early
    assert any("vocab.txt" in str(race) for race in early.races()), early.races()


def truncate_while_read(folder):
    """attack14 a14: rank 0 empties a results file with os.truncate while rank 1, with nothing between, reads it."""
    import torch.distributed as dist

    path = os.path.join(folder, "results.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("0.91")
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.3)
        os.truncate(path, 0)
        return None
    with open(path) as f:
        return f.read()


def test_a_truncation_is_a_change_that_races_with_a_read_and_says_so(tmp_path):
    run = bl.run(truncate_while_read, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    races = run.races()
    assert len(races) == 1 and "rank 0 truncated `results.txt`" in str(races[0]), races


def test_the_ordering_model_keeps_store_values_as_long_as_the_recorder_does():
    from barrierlab import ordering, record

    assert ordering._VALUE_KEPT == record.STORE_VALUE_KEPT


def _push_then_or_before_write(folder, push_first):
    import os
    import time

    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    if rank != 0:
        if push_first:
            store.queue_push("q", str(rank))  # signalled before the write: nothing orders the write
            time.sleep(0.2)
        with open(os.path.join(folder, f"r{rank}.txt"), "w") as f:
            f.write("x")
        if not push_first:
            store.queue_push("q", str(rank))
    else:
        for _ in range(world - 1):
            store.queue_pop("q")
        time.sleep(0.4)
        for r in range(1, world):
            with open(os.path.join(folder, f"r{r}.txt")) as f:
                f.read()


def test_a_store_queue_pop_comes_after_the_push_whose_value_it_returned(tmp_path):
    """attack20 a18: each rank writes its file, then pushes its rank to a store queue; rank 0 pops one item per
    rank, then reads every file. Each pop came after the push it returned, not only after the first push: no
    race. Pushing before writing is still a race."""
    for name, push_first, races in (("right", False, 0), ("wrong", True, 2)):
        folder = tmp_path / name
        folder.mkdir()
        run = bl.run(_push_then_or_before_write, 3, args=(str(folder), push_first))
        assert [str(r.status) for r in run] == ["finished"] * 3, run
        assert len(run.races()) == races, (name, run.races())


def mapped_then_changed(folder, how):
    """attack18 a05: rank 1 loads with torch.load(mmap=True), whose tensors read the file whenever they are used;
    after a barrier rank 0 changes the file: in place (torch.save), by a rename into place, or by removing it."""
    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "last.pt")
    if dist.get_rank() == 0:
        torch.save({"w": torch.ones(8)}, path)
    dist.barrier()
    state = torch.load(path, mmap=True) if dist.get_rank() == 1 else None
    dist.barrier()
    if dist.get_rank() == 0:
        if how == "in place":
            torch.save({"w": torch.full((8,), 7.0)}, path)
        elif how == "renamed":
            torch.save({"w": torch.full((8,), 7.0)}, path + ".tmp")
            os.replace(path + ".tmp", path)
        else:
            os.remove(path)
        return 0.0
    time.sleep(0.2)
    return float(state["w"].sum())


@pytest.mark.parametrize("how, raced", [("in place", True), ("renamed", False), ("removed", False)])
def test_a_mapped_load_is_read_until_the_rank_ends_but_keeps_a_replaced_or_removed_file(tmp_path, how, raced):
    run = bl.run(mapped_then_changed, 2, args=(str(tmp_path), how))
    assert run.ok, run
    found = [str(race) for race in run.races() if race.first.path.endswith("last.pt")]
    assert bool(found) is raced, found
    assert not found or "with mmap=True: its tensors read the file whenever they are used" in found[0], found


def _content_marker(folder: str, read_data_first: bool):
    import torch.distributed as dist

    data, marker = os.path.join(folder, "data.txt"), os.path.join(folder, "READY")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        with open(data, "w") as f:
            f.write("x" * 500)
        with open(marker, "w") as f:  # the marker, written after the data file was closed
            f.write("ok")
        return "made"
    early = None
    if read_data_first:  # a read before the wait: nothing orders it
        try:
            with open(data) as f:
                early = len(f.read())
        except FileNotFoundError:
            early = "missing"
    unwritten = 0  # reads of the marker that found it made but not yet written: each a true race with its write
    while True:  # poll the marker by reading it until it says "ok" (attack26 a09)
        try:
            with open(marker) as f:
                if f.read() == "ok":
                    break
                unwritten += 1
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    with open(data) as f:
        return early, len(f.read()), unwritten


@pytest.mark.xfail(
    strict=False,
    reason="open bug in the ordering model: on a loaded machine the poll's misses (reads that found no READY yet, "
    "just before rank 0 created it) are reported as races with its creation: 76 in session 33 at load 13-17, 95 in "
    "session 34 beside a fresh-clone CI run; at lower load the same run passes (the CI beside it passed it). A miss "
    "that the same rank's later read of the path follows is a poll, not a race; the model does not yet say so",
)
@pytest.mark.parametrize("read_data_first", [False, True])
def test_a_marker_found_by_reading_it_orders_what_its_maker_did_before_it(tmp_path, read_data_first):
    # attack26 a09: a marker polled by reading it until it said "ok" got 429 races, three of them on the data file
    # the marker ordered; an empty marker polled with os.path.exists got none. Its own content stays unordered.
    run = bl.run(_content_marker, 3, args=(str(tmp_path), read_data_first), timeout=10)
    assert run.ok, run
    races = ordering.races(run)
    on_data = [r for r in races if os.path.basename(r.first.path) == "data.txt"]
    on_marker = [r for r in races if os.path.basename(r.first.path) == "READY"]
    # each pairs rank 0's write of the marker with another rank's read of it: the read that found "ok", or, on a
    # loaded machine, a read between the marker's creation and its write (a fresh-clone CI saw rank 2's read
    # first, and at load 5-7 one saw 90, rank 0 held up between opening the marker and writing it); never every
    # miss of the poll (was ~420): at most the reads that found it made but unwritten, which the ranks count
    assert all({r.first.how, r.second.how} == {"write", "read"} for r in on_marker), races
    assert all(0 in (r.first.rank, r.second.rank) for r in on_marker), races
    unwritten = sum(run[r].value[2] for r in (1, 2))
    misses = sum(ordering.found_no_file(r.second.event if r.second.how == "read" else r.first.event) for r in on_marker)
    # (session 33: once, at load 13-17 beside another suite, 76 with 0 unwritten: the text says what they were)
    assert len(on_marker) <= 2 * 6 + unwritten, (len(on_marker), unwritten, misses, [str(r) for r in on_marker[:3]])
    if read_data_first:
        assert {r.second.rank if r.second.how == "read" else r.first.rank for r in on_data} == {1, 2}, races
    else:
        assert on_data == [], on_data


def _mapped_then_rewritten(folder: str):
    import numpy as np
    import torch.distributed as dist

    path = os.path.join(folder, "a.npy")
    if dist.get_rank() == 0:
        np.save(path, np.zeros(1024))
    dist.barrier()
    if dist.get_rank() == 1:
        mapped = np.load(path, mmap_mode="r")  # MAPS: read whenever it is used
    dist.barrier()
    if dist.get_rank() == 0:
        np.save(path, np.ones(1024))  # the same file rewritten in place (same size)
        return "rewrote"
    time.sleep(0.4)
    return float(mapped.sum())


def test_a_numpy_mapping_is_a_read_that_lasts_and_races_a_later_rewrite(tmp_path):
    # attack26 a07: rank 1 read rank 0's new values through a mapping made before the barrier; no race was reported
    pytest.importorskip("numpy")
    run = bl.run(_mapped_then_rewritten, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    races = ordering.races(run)
    assert [(r.first.how, r.second.how) for r in races if r.first.path.endswith("a.npy")] == [("read", "write")], races


def remove_after_a_read(folder):
    """review60b M1: rank 1 reads a checkpoint; rank 0, later by the clock alone, removes it."""
    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.pt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("state")
        dist.barrier()
        time.sleep(0.3)
        os.remove(path)
    else:
        dist.barrier()
        with open(path) as f:
            f.read()
    return "done"


def test_a_removal_after_a_read_is_ordered_after_the_read_not_after_a_write():
    """The removal must come last: what would order it goes after the read is over and before the removal, not
    'once the change is complete (the file written and closed)'."""
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(remove_after_a_read, 2, args=(folder,))
    assert run.ok, run
    texts = [str(race) for race in run.races()]
    assert len(texts) == 1 and "rank 0 removed" in texts[0], texts
    assert "and before the removal would order them" in texts[0] and "written and closed" not in texts[0], texts
