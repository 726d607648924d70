"""The ordering model on ordinary store and point-to-point handoffs, from real runs (attack11): a counter added to
each step costs near-linear time (a26), a countdown latch orders what it counts (a18) and no more, a key reused
each step with delete_key orders each step by its own set (a03), a store.check poll orders like a wait (a14), and
send/recv naming the peer by its rank in the group pair up (a13)."""

from __future__ import annotations

import os
import time

import pytest

import barrierlab as bl
from barrierlab import ordering

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def _store():
    import torch.distributed as dist

    return dist.distributed_c10d._get_default_store()


def count_samples(steps):
    """Every rank adds to a shared counter each step (progress counting), then a barrier."""
    import torch.distributed as dist

    store = _store()
    for _ in range(steps):
        store.add("samples_seen", 32)
    dist.barrier()
    return steps


def test_a_counter_added_to_each_step_costs_near_linear_time():
    """4 ranks x 1,000 adds: the model sorted and linked every earlier add again for each add (6 million edges,
    87 s on main e2e71d4's model; now about 12,000 edges and under a second)."""
    steps, world = 1000, 4
    run = bl.run(count_samples, world, args=(steps,), timeout=60)
    assert run.ok and not run.events_dropped, run
    began = time.monotonic()
    order = ordering.Order(run)
    assert order.races() == []
    spent = time.monotonic() - began
    edges = sum(len(targets) for targets in order.edges.values())
    assert edges <= 8 * steps * world, edges  # a few per add (the latest certain add of each other rank)
    assert spent < 15, spent  # generous: the machine is shared
    # the counter still orders: rank 0's last add (it read the final total) comes after every rank's last add
    last = {r.rank: [e for e in r.events if e.kind == "store"][-1] for r in run.ranks}
    final = max(last.values(), key=lambda e: int(e.value))
    holder = next(rank for rank, e in last.items() if e is final)
    assert int(final.value) == 32 * steps * world
    for rank, e in last.items():
        if rank != holder:
            assert order.before(order.enter(rank, e), order.leave(holder, final)), rank


def countdown(folder, early):
    """Rank 0 sets a latch to world - 1; each other rank writes its file, then adds -1; rank 0 polls the latch
    (add of 0) until it reads 0 and reads every file. With ``early``, the last rank writes its file at once but
    counts down late, and rank 0 waits only for the count to reach 1, then reads the last rank's file: a race."""
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    store = _store()
    if rank == 0:
        store.set("pending", str(world - 1))
    dist.barrier()
    if rank != 0:
        path = os.path.join(folder, f"result{rank}.txt")
        if early and rank == world - 1:
            with open(path, "w") as f:
                f.write(str(rank))
            time.sleep(1.0)
        else:
            time.sleep(0.05 * rank)
            with open(path, "w") as f:
                f.write(str(rank))
        store.add("pending", -1)
        return rank
    time.sleep(0.3)  # the ranks that count down in time have (one poll: no earlier read to link by chance)
    while store.add("pending", 0) > (1 if early else 0):
        time.sleep(0.01)
    total = 0
    for r in [world - 1] if early else range(1, world):
        with open(os.path.join(folder, f"result{r}.txt")) as f:
            total += int(f.read())
    return total


@pytest.mark.parametrize("early", [False, True])
def test_a_countdown_latch_orders_what_it_counted_and_no_more(tmp_path, early):
    """Read at 0, the latch (a set, then adds of -1) needs every rank's add: each file's write comes before rank
    0's reads (it stopped at `total >= count` and linked nothing, a18). Read at 1, the last rank's add is not
    among those that made it: its file's write is a race."""
    run = bl.run(countdown, 4, args=(str(tmp_path), early), timeout=10)
    assert run.ok, run
    races = ordering.races(run)
    if early:
        assert [(race.first.rank, race.second.rank) for race in races] == [(3, 0)], races
    else:
        assert races == [], races
        assert len(ordering.Order(run).handoffs()) == 3


def reuse_a_key(folder, steps):
    """Rank 0 writes each step's shard, then sets one key; rank 1 waits for it, reads, deletes the key and
    acknowledges through another key that rank 0 deletes in turn."""
    import torch.distributed as dist

    rank = dist.get_rank()
    store = _store()
    for i in range(steps):
        path = os.path.join(folder, f"shard{i}.txt")
        if rank == 0:
            with open(path, "w") as f:
                f.write(str(i))
            store.set("shard_ready", str(i))
            store.wait(["ack"])
            store.delete_key("ack")
        else:
            store.wait(["shard_ready"])
            with open(path) as f:
                assert f.read() == str(i)
            store.delete_key("shard_ready")
            store.set("ack", "1")
    return rank


def test_a_key_reused_each_step_with_delete_key_orders_each_step_by_its_own_set(tmp_path):
    """The first set of the key stayed linked to every later wait (a03): steps 2 and 3 were races."""
    run = bl.run(reuse_a_key, 2, args=(str(tmp_path), 3), timeout=10)
    assert run.ok, run
    assert ordering.races(run) == [], ordering.races(run)
    order = ordering.Order(run)
    sets = [e for e in run[0].events if e.kind == "store" and e.name == "set"]
    waits = [e for e in run[1].events if e.kind == "store" and e.name == "wait"]
    assert len(sets) == len(waits) == 3
    for i, wait in enumerate(waits):  # each wait is linked to its own step's set, not the first one
        linked = [a for a, b in order.edges_into(1) if b == order.leave(1, wait)]
        assert linked == [order.enter(0, sets[i])], (i, linked)


def poll_with_check(path):
    """Rank 0 writes a file, then sets a key; the others poll store.check until the key is there, then read."""
    import torch.distributed as dist

    store = _store()
    if dist.get_rank() == 0:
        time.sleep(0.2)
        with open(path, "w") as f:
            f.write("the a of")
        store.set("vocab_ready", "1")
        return "the a of"
    while not store.check(["vocab_ready"]):
        time.sleep(0.01)
    with open(path) as f:
        return f.read()


def test_a_store_check_polled_until_true_orders_like_a_wait(tmp_path):
    run = bl.run(poll_with_check, 3, args=(str(tmp_path / "vocab.txt"),), timeout=10)
    assert run.ok and run.values == ["the a of"] * 3, run
    assert ordering.races(run) == [], ordering.races(run)


def send_by_group_rank(path, blocking):
    """Rank 0 writes a file, then sends on the group of ranks 0 and 2, naming the receiver by its rank in the group
    (group_dst=1: global rank 2); the receiver names the sender by group_src= and reads the file."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    pipe = dist.new_group([0, 2])  # group ranks: 0 -> 0, 2 -> 1
    t = torch.zeros(1)
    if rank == 0:
        with open(path, "w") as f:
            f.write("x")
        t += 1
        if blocking:
            dist.send(t, group=pipe, group_dst=1)
        else:
            dist.isend(t, group=pipe, group_dst=1).wait()
    elif rank == 2:
        if blocking:
            dist.recv(t, group=pipe, group_src=0)
        else:
            dist.irecv(t, group=pipe, group_src=0).wait()
        with open(path) as f:
            f.read()
    return t.item()


@pytest.mark.parametrize("blocking", [True, False])
def test_send_and_recv_naming_the_peer_by_its_rank_in_the_group_pair_up(tmp_path, blocking):
    """The model read only dst/src (a13): the message that orders the read was not paired."""
    run = bl.run(send_by_group_rank, 3, args=(str(tmp_path / "activations.txt"), blocking), timeout=10)
    assert run.ok and run.values == [1.0, 0.0, 1.0], run
    assert ordering.races(run) == [], ordering.races(run)


def prefix_store_per_step(folder, steps):
    """One PrefixStore per step, each with its own "ready": rank 0 writes the step's shard, then sets it; the
    others wait for it, then read."""
    import torch.distributed as dist

    rank = dist.get_rank()
    for i in range(steps):
        store = dist.PrefixStore(f"step{i}", _store())
        path = os.path.join(folder, f"shard{i}.txt")
        if rank == 0:
            with open(path, "w") as f:
                f.write(str(i))
            store.set("ready", "1")
        else:
            store.wait(["ready"])
            with open(path) as f:
                assert f.read() == str(i)
    return rank


def two_prefix_stores(path):
    """Rank 0 writes a file and sets train/ready (read by nobody); rank 2 sets eval/ready later; rank 1 waits for
    eval/ready, then reads rank 0's file: nothing orders the read after the write (a real race)."""
    import torch.distributed as dist

    rank = dist.get_rank()
    train, evaluation = dist.PrefixStore("train", _store()), dist.PrefixStore("eval", _store())
    if rank == 0:
        with open(path, "w") as f:
            f.write("loss 0.1")
        train.set("ready", "1")
    elif rank == 2:
        time.sleep(0.3)
        evaluation.set("ready", "1")
    else:
        evaluation.wait(["ready"])
        with open(path) as f:
            f.read()
    return rank


def test_keys_of_prefix_stores_are_told_apart_by_their_prefix(tmp_path):
    """Keys were matched by their bare name (a22, a22b): each step's "ready" of its own PrefixStore was linked to
    the first step's set (false races), and eval/ready was taken for train/ready (a false order hid a race)."""
    run = bl.run(prefix_store_per_step, 2, args=(str(tmp_path), 3), timeout=10)
    assert run.ok, run
    assert ordering.races(run) == [], ordering.races(run)
    assert [e.keys for e in run[1].events if e.kind == "store"] == [[f"step{i}/ready"] for i in range(3)]
    run = bl.run(two_prefix_stores, 3, args=(str(tmp_path / "train_stats.txt"),), timeout=10)
    assert run.ok, run
    races = ordering.races(run)
    assert [(race.first.rank, race.second.rank) for race in races] == [(0, 1)], races


def status_key(folder, unique):
    """attack12 r6: rank 0 sets a status key to "loading", rank 1 writes the data and sets it to "ready", rank 2
    polls store.get until it reads "ready" and then reads the data. With ``unique`` False, rank 0 also wrote
    "ready" first: the value no longer says which set the get read."""
    import torch.distributed as dist

    store, rank = _store(), dist.get_rank()
    data = os.path.join(folder, "data.txt")
    got = None
    if rank == 0:
        store.set("status", "loading" if unique else "ready")
    elif rank == 1:
        time.sleep(0.5)
        with open(data, "w") as f:
            f.write("42")
        store.set("status", "ready")
    else:
        time.sleep(0.1)
        while store.get("status") != b"ready" or not unique and not os.path.exists(data):
            time.sleep(0.05)
        with open(data) as f:
            got = f.read()
    dist.barrier()
    return got


@pytest.mark.parametrize("unique", [True, False], ids=["the value names its set", "two sets wrote it"])
def test_a_get_that_read_a_value_is_ordered_after_the_set_that_wrote_it(tmp_path, unique):
    run = bl.run(status_key, 3, args=(str(tmp_path), unique), timeout=10)
    assert run.ok and run[2].value == "42", run
    races = [race for race in ordering.races(run) if race.first.path.endswith("data.txt")]
    assert bool(races) is not unique, races  # two sets of "ready": which one the get read is not known


def signal_through(folder, how):
    """attack12 r10: rank 0 writes the data, then signals with multi_set, append or queue_push; rank 1 waits for
    the key (or pops the queue), then reads the data."""
    from datetime import timedelta

    import torch.distributed as dist

    store, data, got = _store(), os.path.join(folder, "data.txt"), None
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(data, "w") as f:
            f.write("42")
        if how == "multi_set":
            store.multi_set(["ready", "size"], ["1", "2"])
        elif how == "append":
            store.append("ready", "1")
        else:
            store.queue_push("work", "data.txt")
    else:
        if how == "queue_push":
            store.queue_pop("work")
        else:
            store.wait(["ready"], timedelta(seconds=5))
        with open(data) as f:
            got = f.read()
    dist.barrier()
    return got


@pytest.mark.parametrize("how", ["multi_set", "append", "queue_push"])
def test_more_store_calls_order_a_handoff(tmp_path, how):
    run = bl.run(signal_through, 2, args=(str(tmp_path), how), timeout=10)
    assert run.ok and run[1].value == "42", run
    assert ordering.races(run) == [], ordering.races(run)
    assert any(e.kind == "store" and e.name == how for e in run[0].events)


def failed_compare_set(folder):
    """attack12 (noted): rank 0 writes the data, then a compare_set whose expected value does not match writes
    nothing; rank 2 sets the key later; rank 1 waits for the key and reads. Only rank 2's set made the key."""
    from datetime import timedelta

    import torch.distributed as dist

    store, rank, got = _store(), dist.get_rank(), None
    data = os.path.join(folder, "data.txt")
    if rank == 0:
        with open(data, "w") as f:
            f.write("0")
        store.compare_set("ready", "expected-other", "1")
    elif rank == 2:
        time.sleep(0.4)
        store.set("ready", "1")
    else:
        store.wait(["ready"], timedelta(seconds=5))
        with open(data) as f:
            got = f.read()
    dist.barrier()
    return got


def test_a_compare_set_that_wrote_nothing_orders_nothing(tmp_path):
    run = bl.run(failed_compare_set, 3, args=(str(tmp_path),), timeout=10)
    assert run.ok and run[1].value == "0", run
    cas = next(e for e in run[0].events if e.kind == "store" and e.name == "compare_set")
    assert cas.value == "expected-other" and cas.written == "1", (cas.value, cas.written)
    assert [race for race in ordering.races(run) if race.first.path.endswith("data.txt")], ordering.races(run)


def prepare_behind_torchs_store_barrier(folder, prefixes, barrier=None):
    """Rank 0 writes each split, then every rank passes ``torch.distributed.elastic.utils.store.barrier`` (an
    ``add`` per rank, a ``set`` by the last, a ``wait``) and reads it. Its docstring: usable "once per unique
    key_prefix"; reused, the second barrier passes at once (round 14's store-barrier pair)."""
    import torch.distributed as dist
    from torch.distributed.elastic.utils import store as store_util

    found = []
    for split, prefix in zip(("train", "valid"), prefixes):
        path = os.path.join(folder, f"{split}.txt")
        if dist.get_rank() == 0:
            time.sleep(0.3)
            with open(path, "w") as f:
                f.write(split)
        if barrier is None:
            store_util.barrier(_store(), dist.get_world_size(), key_prefix=prefix, barrier_timeout=10)
        else:
            barrier(prefix)
        try:
            with open(path) as f:
                found.append(f.read())
        except FileNotFoundError:
            found.append("missing")
    return found


@pytest.mark.parametrize("reused", [False, True])
def test_torchs_elastic_store_barrier_orders_like_a_barrier_once_per_key_prefix(tmp_path, reused):
    prefixes = ("ready/", "ready/") if reused else ("train/", "valid/")
    run = bl.run(prepare_behind_torchs_store_barrier, 2, args=(str(tmp_path), prefixes), timeout=10)
    assert run.ok, run
    races = run.races()
    if not reused:
        assert run.values == [["train", "valid"]] * 2 and races == [], [str(r) for r in races]
        return
    assert run.values[1] == ["train", "missing"], run.values  # the reused barrier did not wait
    assert [(r.first.rank, r.second.rank) for r in races if "valid.txt" in r.first.path] == [(1, 0)], races


def prepare_behind_torchs_store_based_barrier(folder, names):
    """As above, through ``distributed_c10d._store_based_barrier`` called by the learner's own code with a group
    name of its own (checkpoint-engine's ``ParameterServer.store_based_barrier``, corpus round 41; its issue #106
    is the reused name): torch's store calls inside it are the learner's hand-off, not torch's start-up."""
    from datetime import timedelta

    import torch.distributed as dist

    def store_based_barrier(name):
        dist.distributed_c10d._store_based_barrier(
            rank=dist.get_rank(),
            store=_store(),
            group_name=name,
            rendezvous_count=dist.get_world_size(),
            timeout=timedelta(seconds=10),
        )

    return prepare_behind_torchs_store_barrier(folder, names, store_based_barrier)


@pytest.mark.parametrize("reused", [False, True])
def test_torchs_store_based_barrier_called_by_the_learner_orders_like_a_barrier_once_per_name(tmp_path, reused):
    names = ("ps_barrier", "ps_barrier") if reused else ("ps_barrier-1", "ps_barrier-2")
    run = bl.run(prepare_behind_torchs_store_based_barrier, 2, args=(str(tmp_path), names), timeout=10)
    assert run.ok, run
    races = run.races()
    if not reused:  # the store calls were recorded (before: none, and both reads raced their writes)
        assert any(e.kind == "store" for r in run.ranks for e in r.events), run
        assert run.values == [["train", "valid"]] * 2 and races == [], [str(r) for r in races]
        return
    assert run.values[1] == ["train", "missing"], run.values  # the reused barrier did not wait
    assert [(r.first.rank, r.second.rank) for r in races if "valid.txt" in r.first.path] == [(1, 0)], races


def test_a_store_barrier_used_again_with_the_same_name_is_named_in_the_diagnosis(tmp_path):
    """checkpoint-engine issue #106 (corpus round 41): the second wait for a key set in the first round returns
    at once; the diagnosis says which wait, where, and that the key was already set."""
    run = bl.run(prepare_behind_torchs_store_based_barrier, 2, args=(str(tmp_path), ("ps_barrier",) * 2), timeout=10)
    said = [line for line in run.diagnosis.evidence if "found it already set" in line]
    assert said, run.diagnosis
    assert "store_based_barrier_key:ps_barrier:last_worker" in said[0] and "test_ordering_store.py" in said[0], said
    fresh = bl.run(prepare_behind_torchs_store_based_barrier, 2, args=(str(tmp_path), ("a", "b")), timeout=10)
    assert not [line for line in fresh.diagnosis.evidence if "already set" in line], fresh.diagnosis
