"""Notebook 06's check rejects the wrong ways to hand rank 0's vocabulary over and passes the right one."""

from __future__ import annotations

import json
import os
import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb06
from barrierlab.scenarios.store_handoff import build_vocab


def _through_a_file(folder, wait):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.json")
    if rank == 0:
        with open(path, "w") as f:
            json.dump(build_vocab(), f)
    wait()
    with open(path) as f:
        return json.load(f)


def unsolved(folder):
    return _through_a_file(folder, dist.barrier)


def dummy_all_reduce_for_barrier(folder):
    return _through_a_file(folder, lambda: dist.all_reduce(torch.zeros(1)))


def sleep_for_barrier(folder):
    return _through_a_file(folder, lambda: time.sleep(0.5) if dist.get_rank() else None)


def every_rank_builds_its_own(folder):
    box = [build_vocab()]
    dist.broadcast_object_list(box, src=0)  # "uses broadcast_object_list", but every rank paid for the build
    return box[0]


def solution_plus_barrier(folder):
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    dist.barrier()  # "to be safe"
    return box[0]


def solution(folder):
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def solution_with_the_source_left_out(folder):
    """review 14b: torch 2.13 makes rank 0 the source of a broadcast_object_list that names none; the check
    found no source, so no order, and said the order came from timing."""
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box)
    return box[0]


def file_removed_afterwards(folder):
    """The file handoff, cleaned up: the folder ends empty, but the vocabulary still went through a file."""
    vocab = _through_a_file(folder, dist.barrier)
    dist.barrier()
    if dist.get_rank() == 0:
        os.remove(os.path.join(folder, "vocab.json"))
    return vocab


def solution_plus_a_cache_only_rank0_reads(folder):
    """Right (review 9b): rank 0 also keeps a cache of what it built, which no other rank reads; the vocabulary
    still travels with broadcast_object_list, so nothing is handed over through the file."""
    box = [build_vocab() if dist.get_rank() == 0 else None]
    if dist.get_rank() == 0:
        with open(os.path.join(folder, "vocab-cache.json"), "w") as f:
            json.dump(box[0], f)
    dist.broadcast_object_list(box, src=0)
    return box[0]


def store_key_handoff(folder):
    """Orders the handoff correctly (notebook 06 §5's store key), but is not the tool the exercise asks for."""
    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        vocab = build_vocab()
        store.set("vocab", json.dumps(vocab))
        return vocab
    return json.loads(store.get("vocab"))  # get waits for the key


def all_gather_object_instead(folder):
    """Every rank sends its object to every rank: rank 0's vocabulary arrives, four objects travel."""
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, build_vocab() if dist.get_rank() == 0 else None)
    return gathered[0]


def broadcast_before_the_build(folder):
    box = [None]
    dist.broadcast_object_list(box, src=0)  # rank 0 has not built anything yet
    if dist.get_rank() == 0:
        box[0] = build_vocab()
    return box[0]


def broadcast_from_the_wrong_rank(folder):
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=1)
    return box[0]


def other_placeholder(folder):
    box = [build_vocab()] if dist.get_rank() == 0 else [{}]  # any placeholder is replaced
    dist.broadcast_object_list(box, src=0)
    return box[0]


def words_only(folder):
    """Broadcast the words in id order; every rank numbers them again."""
    box = [None]
    if dist.get_rank() == 0:
        vocab = build_vocab()
        box[0] = sorted(vocab, key=vocab.get)
    dist.broadcast_object_list(box, src=0)
    return {word: i for i, word in enumerate(box[0])}


def two_objects_in_one_call(folder):
    box = [None, None]
    if dist.get_rank() == 0:
        vocab = build_vocab()
        box = [vocab, len(vocab)]
    dist.broadcast_object_list(box, src=0)
    vocab, size = box
    assert len(vocab) == size
    return vocab


def on_a_group_with_group_src(folder):
    group = dist.new_group(list(range(dist.get_world_size())))
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, group=group, group_src=0)
    return box[0]


def rank0_keeps_its_own(folder):
    vocab = build_vocab() if dist.get_rank() == 0 else None
    box = [vocab]
    dist.broadcast_object_list(box, src=0)
    return vocab if vocab is not None else box[0]


WRONG = [
    (unsolved, "through a file"),
    (dummy_all_reduce_for_barrier, "through a file"),
    (sleep_for_barrier, "nothing orders them"),
    (every_rank_builds_its_own, "build_vocab ran on ranks 0–3"),
    (solution_plus_barrier, "besides broadcast_object_list"),
    (file_removed_afterwards, "through a file"),
    (store_key_handoff, "asks for dist.broadcast_object_list"),
    (all_gather_object_instead, "asks for dist.broadcast_object_list"),
    (broadcast_before_the_build, "did not return the vocabulary"),
    (broadcast_from_the_wrong_rank, "did not return the vocabulary"),
]
RIGHT = [
    solution,
    other_placeholder,
    words_only,
    two_objects_in_one_call,
    on_a_group_with_group_src,
    rank0_keeps_its_own,
    solution_plus_a_cache_only_rank0_reads,
    solution_with_the_source_left_out,
]


@pytest.mark.parametrize("answer, says", WRONG, ids=[fn.__name__ for fn, _ in WRONG])
def test_check_rejects_wrong_fixes(answer, says):
    feedback = nb06.check_share_vocab(answer)
    assert not feedback.passed, feedback.message
    assert feedback.message.startswith("✗") and says in feedback.message, feedback.message


@pytest.mark.parametrize("answer", RIGHT, ids=[fn.__name__ for fn in RIGHT])
def test_check_passes_every_way_of_using_broadcast_object_list(answer):
    feedback = nb06.check_share_vocab(answer)
    assert feedback.passed, feedback.message


def test_a_handoff_that_is_ordered_but_not_the_asked_tool_is_told_both():
    message = nb06.check_share_vocab(store_key_handoff).message
    assert "the handoff is right" in message and "broadcast_object_list" in message, message
