"""Correct: ``in_the_same_node_as`` suppresses ``OSError`` only around the local shared-memory operations; the source
rank always broadcasts (the segment's name, or ``None`` when creating it failed), so every rank makes the same
collectives.

Source: sgl-project/sglang issue #34800 ("[Bug] macOS: shared-memory names can exceed the 31-char POSIX limit,
deadlocking ``in_the_same_node_as`` with no error output", 2026-08) and PR #34910 ("Avoid deadlock when shared-memory
node probe fails"); ``python/sglang/srt/distributed/parallel_state.py`` ``in_the_same_node_as``, which
``GroupCoordinator`` runs on its gloo ``cpu_group`` at start-up. Inside ``with contextlib.suppress(OSError):`` the
source rank creates a ``SharedMemory`` segment named by ``make_shm_name()`` and then broadcasts its name; the other
ranks receive the name and open the segment; afterwards every rank enters ``torch.distributed.barrier(group=pg)`` and
an ``all_reduce``. "When that happens inside ``in_the_same_node_as()``, the resulting ``OSError`` is swallowed by a
``contextlib.suppress(OSError)`` that also wraps a collective operation -- so rank 0 skips its
``broadcast_object_list`` while the other ranks block on theirs."

Here two ranks of a tensor-parallel server build their group coordinator. The segment name is longer than macOS's
31-character ``PSHMNAMLEN``; the item raises ``ENAMETOOLONG`` for such names as macOS's ``shm_open`` does (Linux
would accept the name). Rank 0's creation fails and the error is swallowed, so rank 0 goes to the barrier while rank 1
waits in ``broadcast_object_list``; neither reaches the first request's all-reduce -- that is the buggy twin.

The fix (the PR): "Limit the ``OSError`` suppression to local shared-memory creation/opening. The source broadcasts
``None`` on creation failure, reports itself as colocated, and peers report that they are not on the source node."
Shared-memory name generation is left unchanged, as in the PR.
"""

import contextlib
import errno
import os
import uuid
from datetime import timedelta
from multiprocessing import shared_memory
from unittest.mock import patch

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

PSHMNAMLEN = 31  # macOS limit on a POSIX shared-memory name


def make_shm_name(kind):
    # 24 characters around ``kind``: on macOS only a ``kind`` of up to 7 characters fits (the count)
    return f"sglang_{kind}_{uuid.uuid4().hex[:16]}"


def create_shm(name, size):
    if len(name) > PSHMNAMLEN:  # what macOS's shm_open answers
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), name)
    return shared_memory.SharedMemory(name=name, create=True, size=size)


def in_the_same_node_as(pg, source_rank=0):
    rank = dist.get_rank(group=pg)
    world_size = dist.get_world_size(group=pg)
    is_in_the_same_node = torch.tensor([0] * world_size, dtype=torch.int32)
    ranks = dist.get_process_group_ranks(pg)
    magic_message = b"magic_message"
    shm = None
    try:
        if rank == source_rank:
            name = None
            with contextlib.suppress(OSError):
                shm = create_shm(make_shm_name("node_probe"), 128)
                shm.buf[: len(magic_message)] = magic_message
                name = shm.name
            dist.broadcast_object_list([name], src=ranks[source_rank], group=pg)
            is_in_the_same_node[rank] = 1
        else:
            recv = [None]
            dist.broadcast_object_list(recv, src=ranks[source_rank], group=pg)
            name = recv[0]
            if name is not None:
                with contextlib.suppress(OSError):
                    with patch("multiprocessing.resource_tracker.register", lambda *args, **kwargs: None):
                        shm = shared_memory.SharedMemory(name=name)
                    if shm.buf[: len(magic_message)] == magic_message:
                        is_in_the_same_node[rank] = 1
    except Exception as e:
        print(f"rank {rank}: error ignored in is_in_the_same_node: {e}")
    finally:
        if shm:
            shm.close()
    dist.barrier(group=pg)
    with contextlib.suppress(OSError):
        if rank == source_rank and shm:
            shm.unlink()
    dist.all_reduce(is_in_the_same_node, group=pg)
    return [x == 1 for x in is_in_the_same_node.tolist()]


class GroupCoordinator:
    def __init__(self, ranks):
        self.cpu_group = dist.new_group(ranks, backend="gloo", timeout=timedelta(seconds=TIMEOUT))
        self.rank_in_group = ranks.index(dist.get_rank())
        # decides whether the shared-memory message queue can reach every rank
        self.same_node = in_the_same_node_as(self.cpu_group, source_rank=0)

    def all_reduce(self, t):
        dist.all_reduce(t, group=self.cpu_group)
        return t


def worker():
    rank = dist.get_rank()
    tp_group = GroupCoordinator(list(range(dist.get_world_size())))
    out = tp_group.all_reduce(torch.full((4,), float(rank + 1)))  # the first request's row-parallel matmul
    print(f"rank {rank}: same node {tp_group.same_node}, first all-reduce {out.tolist()}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
