"""lint34b: every rank's way through a file evaluated with its process groups and DistributedDataParallel's own
collectives (``_GroupTracer`` / ``_GroupedRanks`` in lint.py): a DDP model's constructor, the gradient all-reduce of a
backward after a grad-enabled forward outside ``no_sync()``, the bucket rebuild; ``new_group`` groups handed to objects
through ``self.`` attributes; the order of collectives across groups. Each buggy program must be flagged at the line
where a rank waits, each correct twin must stay quiet; the runtime claims are checked with ``bl.run`` on 2-3 ranks."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from barrierlab.lint import lint_file

DDP_SHARDS_BUGGY = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
SHARDS = [[0, 1, 2], [3, 4]]


def my_items(rank):
    return SHARDS[rank]


def train(model, opt, items):
    for _ in items:
        loss = model(torch.randn(4, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def worker():
    rank = dist.get_rank()
    model = DDP(nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, my_items(rank))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

DDP_SHARDS_CORRECT = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
SHARDS = [[0, 1, 2], [3, 4, 5]]


def my_items(rank):
    return SHARDS[rank]


def train(model, opt, items):
    for _ in items:
        loss = model(torch.randn(4, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def worker():
    rank = dist.get_rank()
    model = DDP(nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, my_items(rank))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

DDP_ACCUM_BUGGY = """\
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
ACCUM = 2
MICRO = {0: 1, 1: 3}  # micro-batches per step on each rank


def step(model, n_micro):
    for micro in range(n_micro):
        sync = micro == ACCUM - 1
        with nullcontext() if sync else model.no_sync():
            loss = model(torch.randn(2, 3)).sum()
            loss.backward()


def worker():
    rank = dist.get_rank()
    model = DDP(nn.Linear(3, 1))
    for _ in range(2):
        step(model, MICRO[rank])
    t = torch.ones(1)
    dist.all_reduce(t)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

DDP_ACCUM_CORRECT = """\
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
ACCUM = 2
MICRO = {0: 1, 1: 3}  # micro-batches per step on each rank


def step(model, n_micro):
    for micro in range(n_micro):
        sync = micro == n_micro - 1
        with nullcontext() if sync else model.no_sync():
            loss = model(torch.randn(2, 3)).sum()
            loss.backward()


def worker():
    rank = dist.get_rank()
    model = DDP(nn.Linear(3, 1))
    for _ in range(2):
        step(model, MICRO[rank])
    t = torch.ones(1)
    dist.all_reduce(t)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

GRP_SELF_CORRECT = """\
import torch.distributed as dist

WORLD_SIZE = 3
MEMBERS = [0, 2]


class Sender:
    def __init__(self, rank, group):
        self.rank, self.group = rank, group

    def share(self):
        if self.rank not in MEMBERS:
            return None
        box = ["hello"] if self.rank == 0 else [None]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]


def worker():
    rank = dist.get_rank()
    group = dist.new_group(MEMBERS)
    Sender(rank, group).share()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

GRP_SELF_BUGGY = """\
import torch.distributed as dist

WORLD_SIZE = 3
MEMBERS = [0, 2]


class Sender:
    def __init__(self, rank, group):
        self.rank, self.group = rank, group

    def share(self):
        if self.rank not in [0, 1]:
            return None
        box = ["hello"] if self.rank == 0 else [None]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]


def worker():
    rank = dist.get_rank()
    group = dist.new_group(MEMBERS)
    Sender(rank, group).share()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

GRP_ORDER_BUGGY = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2


def world_sum():
    t = torch.ones(1)
    dist.all_reduce(t)


def group_gather(group):
    out = [None, None]
    dist.all_gather_object(out, 1, group=group)


def worker():
    rank = dist.get_rank()
    group = dist.new_group([0, 1])
    if rank == 0:
        world_sum()
    group_gather(group)
    if rank != 0:
        world_sum()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

WORLD_CHUNKS_BUGGY = """\
import torch
import torch.distributed as dist
import torch.nn as nn

WORLD_SIZE = 2
N_ITEMS = 5


class Gatherer:
    def __init__(self, group):
        self.group = group
        self.size = dist.get_world_size(group)
        self.proj = nn.Linear(4, 4)

    def gather(self, x):
        x = self.proj(x)
        parts = [torch.empty_like(x) for _ in range(self.size)]
        dist.all_gather(parts, x, group=self.group)
        return torch.cat(parts)


def worker():
    rank = dist.get_rank()
    data = torch.randn(N_ITEMS, 4)
    mine = torch.chunk(data, WORLD_SIZE)[rank]
    Gatherer(dist.group.WORLD).gather(mine)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""

WORLD_CHUNKS_CORRECT = """\
import torch
import torch.distributed as dist
import torch.nn as nn

WORLD_SIZE = 2
N_ITEMS = 6


class Gatherer:
    def __init__(self, group):
        self.group = group
        self.size = dist.get_world_size(group)
        self.proj = nn.Linear(4, 4)

    def gather(self, x):
        x = self.proj(x)
        parts = [torch.empty_like(x) for _ in range(self.size)]
        dist.all_gather(parts, x, group=self.group)
        return torch.cat(parts)


def worker():
    rank = dist.get_rank()
    data = torch.randn(N_ITEMS, 4)
    mine = torch.chunk(data, WORLD_SIZE)[rank]
    Gatherer(dist.group.WORLD).gather(mine)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def _write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def _found(tmp_path, name, text):
    return {(f.line, f.kind) for f in lint_file(_write(tmp_path, name, text))}


def test_ddp_backward_counted_per_rank_shard(tmp_path):
    """Rank 0's table row has 3 items, rank 1's 2: rank 0's third backward all-reduces the gradients while rank 1
    is in its barrier. The evaluator reports both calls at that step, with the loop that parts the ranks."""
    findings = lint_file(_write(tmp_path, "ddp_shards_buggy", DDP_SHARDS_BUGGY))
    counted = {f.line: f for f in findings if f.kind == "evaluated-count"}
    assert set(counted) == {18, 27}
    assert counted[18].condition_line == 15
    assert "the DDP gradient all-reduce of `loss.backward()`" in counted[18].why
    assert "rank 1 runs 2 iterations and rank 0 runs 3 iterations" in counted[18].why


def test_ddp_backward_counted_even_shards_quiet(tmp_path):
    assert _found(tmp_path, "ddp_shards_correct", DDP_SHARDS_CORRECT) == set()


def test_ddp_no_sync_accumulation_sync_flag_from_config(tmp_path):
    """The sync flag from a fixed accumulation count: rank 0 (1 micro-batch) never syncs, rank 1 (3) syncs at
    its second: rank 1's backward all-reduce meets rank 0's final all_reduce."""
    found = _found(tmp_path, "ddp_accum_buggy", DDP_ACCUM_BUGGY)
    assert (18, "evaluated-count") in found and (27, "evaluated-count") in found


def test_ddp_no_sync_accumulation_synced_at_last_micro_batch_quiet(tmp_path):
    """Each rank syncs at its own last micro-batch: one gradient all-reduce per step on every rank, whatever the
    number of micro-batches; the loop over a per-rank count was flagged before (hidden-collective at line 25)
    and is withdrawn because every rank's evaluated sequence agrees."""
    assert _found(tmp_path, "ddp_accum_correct", DDP_ACCUM_CORRECT) == set()


def test_group_through_self_attributes_members_only_quiet(tmp_path):
    """The ranks that leave before the group's broadcast are exactly those outside the group, handed to the object
    through ``self.group``: no finding (an early-exit before)."""
    assert _found(tmp_path, "grp_self_correct", GRP_SELF_CORRECT) == set()


def test_group_through_self_attributes_wrong_members_flagged(tmp_path):
    """The test keeps ranks 0 and 1, the group is ranks 0 and 2: still flagged."""
    assert (15, "early-exit") in _found(tmp_path, "grp_self_buggy", GRP_SELF_BUGGY)


def test_groups_in_another_order_across_channels_stay_flagged(tmp_path):
    """Each group's own sequence agrees, but rank 0 reduces on the world before gathering on the group and rank 1
    after: the evaluator must not withdraw the findings (it simulates the blocking order across groups)."""
    found = _found(tmp_path, "grp_order_buggy", GRP_ORDER_BUGGY)
    assert {21, 24} <= {line for line, _ in found}


def test_world_group_object_gathers_uneven_chunks(tmp_path):
    """``group=dist.group.WORLD`` held by an object, its size from ``get_world_size(group)``, the tensor through a
    ``nn.Linear`` the object holds: torch.chunk of 5 rows gives rank 0 three and rank 1 two."""
    findings = lint_file(_write(tmp_path, "world_chunks_buggy", WORLD_CHUNKS_BUGGY))
    sized = [f for f in findings if f.kind == "size-mismatch"]
    assert [f.line for f in sized] == [18]
    assert "3 rows on rank 0 and 2 rows on rank 1" in sized[0].condition


def test_world_group_object_even_chunks_quiet(tmp_path):
    assert _found(tmp_path, "world_chunks_correct", WORLD_CHUNKS_CORRECT) == set()


def _module(tmp_path, name, text):
    path = _write(tmp_path, name, text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("name", "text", "world", "ok"),
    [
        ("ddp_shards_buggy", DDP_SHARDS_BUGGY, 2, False),
        ("ddp_shards_correct", DDP_SHARDS_CORRECT, 2, True),
        ("ddp_accum_buggy", DDP_ACCUM_BUGGY, 2, False),
        ("ddp_accum_correct", DDP_ACCUM_CORRECT, 2, True),
        ("grp_self_correct", GRP_SELF_CORRECT, 3, True),
        ("grp_order_buggy", GRP_ORDER_BUGGY, 2, False),
        ("world_chunks_buggy", WORLD_CHUNKS_BUGGY, 2, False),
        ("world_chunks_correct", WORLD_CHUNKS_CORRECT, 2, True),
    ],
)
def test_runtime_agrees(tmp_path, monkeypatch, name, text, world, ok):
    """What lint says against a real run on gloo: the buggy programs fail or time out, the twins finish."""
    import barrierlab as bl

    monkeypatch.syspath_prepend(str(tmp_path))
    module = _module(tmp_path, name, text)
    run = bl.run(module.worker, world_size=world, timeout=5, deadline=60)
    assert run.ok == ok, run.diagnosis
