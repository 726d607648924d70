"""Two texts review58b found misleading, on runs that finished: a group only its members made ("a collective
reached by only some ranks", the run's finishing unsaid; torch wants every rank to make every group), and a
barrier(async_op=True) never waited for ("a result that cannot be trusted", "read its tensors": a barrier has
none, what it loses is the ordering)."""

from __future__ import annotations

import inspect

import pytest

import barrierlab as bl


def pair_makes_its_own_group():
    import torch.distributed as dist

    if dist.get_rank() in (0, 1):
        pair = dist.new_group([0, 1])
        dist.barrier(group=pair)


def barrier_never_waited():
    import torch.distributed as dist

    dist.barrier(async_op=True)


@pytest.mark.timeout(120)
def test_a_group_made_by_members_only_is_named_as_such_on_a_finished_run():
    run = bl.run(pair_makes_its_own_group, 3, timeout=5)
    assert run.statuses == ["finished"] * 3
    diagnosis = run.diagnosis
    assert diagnosis.headline.startswith("Every rank finished, but a group was made by only some ranks"), diagnosis
    assert "rank 2 never did" in diagnosis.headline and "every rank of the world" in diagnosis.advice


@pytest.mark.timeout(120)
def test_an_unwaited_async_barrier_loses_its_ordering_not_a_result():
    run = bl.run(barrier_never_waited, 2, timeout=5)
    text = str(run.diagnosis)
    assert "whose ordering cannot be trusted" in text and "it ordered nothing" in text, text
    assert "tensors" not in text and "whose result" not in text, text


def readers_never_wait_for_their_async_barrier(folder):
    """review66b M2: a barrier is there, called with async_op=True; nobody waits for it before reading."""
    import os
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("d")
    dist.barrier(async_op=True)
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()


@pytest.mark.timeout(120)
def test_readers_that_raised_past_an_unwaited_async_barrier_are_told_it_was_not_waited_for(tmp_path):
    run = bl.run(readers_never_wait_for_their_async_barrier, 3, args=(str(tmp_path),), timeout=3, deadline=15)
    d = run.diagnosis
    assert run.statuses == ["finished", "raised", "raised"], run
    assert "the barrier between them was called with async_op=True and not waited for before the read" in d.headline
    assert any(
        line.startswith("ranks 1 and 2's barrier(async_op=True)") and "had not been waited for" in line
        for line in d.evidence
    ), d


def rank_3_skips_the_monitored_barrier():
    """review67b C1: rank 3's process ends without the call; rank 0 fails on its closed connection at once."""
    from datetime import timedelta

    import torch.distributed as dist

    if dist.get_rank() != 3:
        dist.monitored_barrier(timeout=timedelta(seconds=5))


@pytest.mark.timeout(120)
def test_a_monitored_barrier_whose_missing_rank_ended_is_not_said_to_have_waited_the_timeout():
    run = bl.run(rank_3_skips_the_monitored_barrier, 4, timeout=10)
    text = str(run.diagnosis)
    assert "waited for the other ranks until the timeout and" not in text, text
    # gloo words rank 0's failure two ways, by timing (CI at load 10 gave the second): its monitored barrier's own
    # message naming rank 3, or the closed connection itself; either text must say it did not wait the timeout
    assert "when a missing rank's process had ended, only until its closed connection told it so" in text or (
        "rank 0 failed in it: a peer closed its connection" in text
        and "at once, without waiting for the timeout" in text
    ), text


def pair_barrier_on_a_group_every_rank_made():
    """review69b C1: correct code (every rank makes the group, its members use it), once told as "after the same 1
    collective call in the same order" though ranks 2 and 3 made no call but new_group."""
    import torch.distributed as dist

    pair = dist.new_group([0, 1])
    if dist.get_rank() in (0, 1):
        dist.barrier(group=pair)
    dist.barrier()


@pytest.mark.timeout(120)
def test_a_finished_runs_headline_counts_the_default_groups_and_each_subgroups_calls_apart():
    run = bl.run(pair_barrier_on_a_group_every_rank_made, 4, timeout=5)
    assert run.statuses == ["finished"] * 4
    headline = run.diagnosis.headline
    assert headline.startswith("All 4 ranks finished: every rank made the same 1 collective call"), headline
    assert "on the default group and the same 1 new_group call" in headline, headline
    assert "on the subgroup of ranks [0, 1], ranks 0 and 1 made 1 collective call each" in headline, headline
    assert "ranks 2" not in headline, headline


def rank_0_raises_while_rank_2_waits_on_it_in_a_subgroup():
    """Round 39's ART item (OpenPipe/ART #919) at times: rank 0 raised while rank 2 was still in a call with it, so
    rank 2 never made the next group; once told as "a group was made by only some ranks: rank 2 never did"."""
    import time

    import torch.distributed as dist

    rank = dist.get_rank()
    g = dist.new_group([0, 2])
    if rank == 2:
        dist.barrier(group=g)  # waits for rank 0's, below
    dist.new_group([0, 1])
    if rank == 1:
        # alive until rank 0's new_group([0, 1]) has connected to it: in a CI run at load 9, rank 1 returned and
        # exited first, and rank 0 failed in that new_group on the closed connection, never reaching its raise
        time.sleep(3.0)
    if rank == 0:
        time.sleep(1.0)  # rank 1 finishes new_group([0, 1]) first (0.3 s was too little once, beside the suite)
        raise ValueError("bad batch")  # before its barrier on g
    if rank == 0:
        dist.barrier(group=g)


@pytest.mark.timeout(120)
def test_a_rank_broken_by_a_peers_failure_before_a_group_is_not_said_to_have_skipped_it():
    run = bl.run(rank_0_raises_while_rank_2_waits_on_it_in_a_subgroup, 3, timeout=5)
    assert run.statuses == ["raised", "finished", "raised"], run.statuses
    headline = run.diagnosis.headline
    assert headline.startswith("rank 0 failed by itself (raised at"), headline
    assert "rank 2 failed in barrier at" in headline and "when its connection closed" in headline, headline
    assert "before reaching new_group #2" in headline and "only some ranks" not in headline, headline


def half_the_ranks_raise_before_their_subgroups_all_reduce():
    """Round 39's ART item (OpenPipe/ART #919): ranks 0 and 2 raised by themselves before their tensor-parallel
    all_reduce, whose other members waited; once told as "a collective of a subgroup reached by only some of its
    members", with advice about a condition around the subgroup's collective."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2]
    dist.barrier()  # every group is connected before a rank raises (else rank 1 may fail still in new_group)
    if rank % 2 == 0:
        raise ValueError("bad shard")
    dist.all_reduce(torch.ones(1), group=tp)


@pytest.mark.timeout(120)
def test_subgroup_members_that_raised_by_themselves_are_the_cause_not_a_skipped_call():
    run = bl.run(half_the_ranks_raise_before_their_subgroups_all_reduce, 4, timeout=5)
    headline = run.diagnosis.headline
    assert headline.startswith("ranks 0 and 2 failed by themselves (raised at"), headline
    assert 'raise ValueError("bad shard")' in headline and "ranks 1 and 3 failed because of it" in headline, headline
    assert "reached by only some of its members" not in str(run.diagnosis)


def member_fails_on_the_refusers_closed_connection():
    """review70b M2: a group-local src=0 on new_group([2, 3]); rank 3 fails on rank 2's closed connection before it
    reaches the broadcast (in the review's run it was still connecting in new_group; here it waits in a recv)."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    g = dist.new_group([2, 3])
    t = torch.full((2,), float(rank))
    if rank == 3:
        dist.recv(t, src=2)
    if rank in (2, 3):
        dist.broadcast(t, src=0, group=g)


@pytest.mark.timeout(120)
def test_a_refused_subgroup_broadcast_is_the_cause_not_a_condition():
    run = bl.run(member_fails_on_the_refusers_closed_connection, 4, timeout=3)
    assert run.statuses == ["finished", "finished", "raised", "raised"], run
    d = run.diagnosis
    assert d.headline.startswith("rank 2 failed by itself"), d
    assert (
        "inside its broadcast #1 on the group of ranks [2, 3], before sending anything: ValueError: Global rank 0"
        in (d.headline)
    ), d
    assert "rank 3, a member too, failed before reaching that call, on a closed connection" in d.headline, d
    assert "reached by only some of its members" not in str(d) and "condition" not in d.advice, d


def half_the_ranks_make_a_pair_group():
    """review71b M1 (its c11): ranks 0 and 1 make new_group([0, 1]) and use it; ranks 2 and 3 skip it. The advice
    says what a later group every rank makes would do; measured with plain torch (4 ranks, new_group(timeout=2/4/8
    s) after this): ranks 0, 1 raised a store timeout after 2/4/8 s; ranks 2, 3 either raised "Connect timeout"
    after 20/40 s (five times 4/8 s) or made the group and timed out in its barrier after 2/4/8 s."""
    import torch.distributed as dist

    if dist.get_rank() < 2:
        dist.barrier(group=dist.new_group([0, 1]))
    dist.barrier()


@pytest.mark.timeout(120)
def test_a_skipped_group_is_told_what_a_later_group_does_on_each_side():
    run = bl.run(half_the_ranks_make_a_pair_group, 4, timeout=5)
    assert run.statuses == ["finished"] * 4, run
    d = run.diagnosis
    assert d.headline.startswith("Every rank finished, but a group was made by only some ranks"), d
    assert "ranks 2 and 3 never did" in d.headline, d
    assert (
        "the ranks that made the skipped group may stay in its own new_group, or wait in the later new_group until its timeout"
        in d.advice
    ), d
    assert "the ranks that skipped it" in d.advice and "'Connect timeout' after five times that timeout" in d.advice
    assert "raises a store timeout (DistStoreError) after that timeout" in d.advice, d  # review83d C2
    assert "gloo/transport/tcp/pair.h" in d.advice and "their first collective on the group fails" in d.advice, d


def each_waits_then_sets_its_own_key():
    """review71b M2 (its c25): rank 0 waits for 'k_from_1' then sets 'k_from_0'; rank 1 the other way round;
    ranks 2 and 3 return. Each key is set in the source, only after the setter's own wait: a cycle, once told as
    "keys no rank set" with advice to add a missing set."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        store.wait(["k_from_1"], timedelta(seconds=2))
        store.set("k_from_0", "x")
    elif dist.get_rank() == 1:
        store.wait(["k_from_0"], timedelta(seconds=2))
        store.set("k_from_1", "x")


def each_waits_then_sets_a_computed_key():
    """The same cycle with keys the source computes: it cannot say which key a rank sets."""
    from datetime import timedelta

    import torch.distributed as dist

    rank = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    if rank < 2:
        store.wait([f"k_from_{1 - rank}"], timedelta(seconds=2))
        store.set(f"k_from_{rank}", "x")


@pytest.mark.timeout(120)
def test_a_store_wait_cycle_the_source_shows_is_told_as_a_cycle_with_its_lines():
    run = bl.run(each_waits_then_sets_its_own_key, 4, timeout=5, deadline=20)
    assert run.statuses == ["raised", "raised", "finished", "finished"], run
    d = run.diagnosis
    first = inspect.getsourcelines(each_waits_then_sets_its_own_key)[1]
    here = "tests/test_diagnose_group_and_async_texts.py"
    assert d.headline.startswith("A wait cycle through the store: ranks 0 and 1 timed out in store waits"), d
    assert (
        f"rank 0 in store.wait for 'k_from_1', which the source sets after rank 1's wait, at {here}:{first + 14}"
        in (d.headline)
    ), d
    assert (
        f"rank 1 in store.wait for 'k_from_0', which the source sets after rank 0's wait, at {here}:{first + 11}"
        in (d.headline)
    ), d
    assert "no rank set" not in str(d) and "Make sure some rank sets" not in d.advice, d
    assert d.advice.startswith("Break the cycle"), d


@pytest.mark.timeout(120)
def test_a_store_wait_cycle_the_source_cannot_show_does_not_call_the_keys_missing():
    run = bl.run(each_waits_then_sets_a_computed_key, 4, timeout=5, deadline=20)
    assert run.statuses == ["raised", "raised", "finished", "finished"], run
    d = run.diagnosis
    assert "for keys no rank had set when the waits timed out" in d.headline, d
    assert "no rank set" not in d.headline, d
    assert "a wait cycle" in d.advice and "make sure some rank sets every key" in d.advice, d


def reads_before_waiting():
    """review71b M3 (its c26): each rank reads t before work.wait(); every rank returned its own value."""
    import torch
    import torch.distributed as dist

    t = torch.ones(100000) * (dist.get_rank() + 1)
    w = dist.all_reduce(t, async_op=True)
    first = float(t[0])
    w.wait()
    return first


def waits_then_reads():
    import torch
    import torch.distributed as dist

    t = torch.ones(100000) * (dist.get_rank() + 1)
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    return float(t[0])


@pytest.mark.timeout(120)
def test_a_finished_run_whose_source_reads_before_the_wait_says_so_with_both_lines():
    run = bl.run(reads_before_waiting, 4, timeout=5)
    assert run.statuses == ["finished"] * 4, run
    d = run.diagnosis
    first = inspect.getsourcelines(reads_before_waiting)[1]
    here = "tests/test_diagnose_group_and_async_texts.py"
    assert "But in the source, a line reads the tensor of an async_op=True collective before its work.wait()" in (
        d.headline
    ), d
    line = next(x for x in d.evidence if x.startswith("In the source:"))
    assert f"ranks 0–3's all_reduce(async_op=True) at {here}:{first + 6}" in line, line
    assert f"line {first + 7} uses `t` before its work.wait() at line {first + 8}" in line, line
    assert "the record holds no reads of tensors" in line and "the rank's own value, not the result" in line, line


@pytest.mark.timeout(120)
def test_a_finished_run_that_waits_before_reading_gets_no_read_hazard():
    d = bl.run(waits_then_reads, 4, timeout=5).diagnosis
    assert "In the source" not in str(d) and "But" not in d.headline, d


def rank_2_never_calls_the_barrier_rank_1_waits_in(folder):
    """review83d C1/M4: rank 0 waits in a barrier of [0, 1] for rank 1, which waits in a barrier of [1, 2] that
    rank 2 never calls; once told as rank 1 never calling the first ("after 0 collective calls"), the subgroup
    [1, 2] and rank 2 unsaid."""
    import os
    import time

    import torch.distributed as dist

    pair = dist.new_group([0, 1])
    other = dist.new_group([1, 2])
    rank = dist.get_rank()
    if rank in (0, 1):
        open(os.path.join(folder, f"rank{rank}"), "w").close()  # about to enter its barrier
    if rank == 0:
        dist.barrier(group=pair)
    elif rank == 1:
        dist.barrier(group=other)  # rank 2 never calls it: the bug
        dist.barrier(group=pair)
    elif rank == 2:
        # alive until ranks 0 and 1 are at their barriers (on a loaded machine, a rank 2 that returned at once
        # could exit before rank 1's new_group([1, 2]) had connected to it): its exit then ends rank 1's wait
        while not all(os.path.exists(os.path.join(folder, f"rank{r}")) for r in (0, 1)):
            time.sleep(0.05)
        time.sleep(0.5)


@pytest.mark.timeout(120)
def test_a_wait_on_a_rank_held_in_another_subgroups_barrier_names_the_call_never_made(tmp_path):
    run = bl.run(rank_2_never_calls_the_barrier_rank_1_waits_in, 4, args=(str(tmp_path),), timeout=20, deadline=60)
    assert run.statuses == ["raised", "raised", "finished", "finished"], run
    d = run.diagnosis
    assert d.kind == "only-some-ranks", d
    assert "rank 1 called barrier #1 on the group of ranks [1, 2]" in d.headline, d
    assert "rank 2, in that group too, never did" in d.headline, d
    assert "Rank 0 waited in turn for rank 1 in barrier #1 on the group of ranks [0, 1]" in d.headline, d
    text = str(d)
    assert "after 0 collective calls on the default group, 1 on the group of ranks [1, 2]" in text, text
    assert "Connection closed by peer after 0 collective calls and" not in text, text  # rank 1's, as told before
    ended = [line for line in d.evidence if line.startswith("rank 0 raised:")]
    assert ended and "Processes that had ended: rank 1 (raised)" in ended[0], d


@pytest.mark.timeout(120)
def test_the_others_of_a_failed_rank_are_not_all_said_to_have_failed_on_its_connections():
    """review83d M1 (notebook 03 §7): "so the others were in all_reduce #3 and failed there when the connections to
    rank 1 closed", though rank 3 waited on ranks 0 and 2 and failed only when one of them ended."""
    from barrierlab.scenarios import exception_mid_loop

    run = bl.run(exception_mid_loop.scenario, 4, timeout=20)
    assert run.statuses == ["raised"] * 4, run
    d = run.diagnosis
    assert d.headline.startswith("rank 1 failed by itself (raised at"), d
    assert "so ranks 0, 2 and 3, in all_reduce #3, failed there on closed connections" in d.headline, d
    assert "at once if waiting on rank 1, as its connections closed" in d.headline, d
    assert "else when the one they were waiting on failed and ended in turn" in d.headline, d
    assert "when the connections to rank 1 closed" not in d.headline, d
    order = next(line for line in d.evidence if line.startswith("when each failed: "))
    # the first to fail failed before any other had ended: that one is told as failing on rank 1's connection
    assert "failed before any of the others had ended, so on a connection of rank 1" in order, order
