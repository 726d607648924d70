"""review94l's findings on lint's texts (session 34), each checked on a small program of this file's own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from barrierlab.lint import Finding, lint_source


def findings(source: str) -> list[Finding]:
    return lint_source(textwrap.dedent(source), "prog.py")


def of_kind(found: list[Finding], kind: str) -> list[Finding]:
    return [f for f in found if f.kind == kind]


EXTRA_ALL_REDUCE = """
import torch
import torch.distributed as dist

WORLD_SIZE = 2


def worker():
    rank = dist.get_rank()
    t = torch.ones(2)
    dist.all_reduce(t)
    if rank == 0:
        t.mul_(2)
        dist.all_reduce(t)  # only rank 0
    dist.all_reduce(t)
    return t


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_evaluated_count_says_gloo_fails_at_once_when_the_other_rank_returns() -> None:
    """C1: rank 1 returns and its process ends; gloo then fails rank 0's unpaired call at once ('Connection closed
    by peer'), it does not wait until the timeout."""
    (count,) = of_kind(findings(EXTRA_ALL_REDUCE), "evaluated-count")
    assert count.line == 15
    assert "ends its process (by returning)" in count.why
    assert "fails as soon as that happens ('Connection closed by peer')" in count.why
    assert "waits for ranks that never make it" not in count.why


def test_evaluated_count_names_the_extra_call_that_shifts_the_pairing() -> None:
    """M2: the finding sits on the last all_reduce, which every rank makes; the cause is rank 0's extra call at
    line 14, and the fix says to remove it instead of padding shares."""
    (count,) = of_kind(findings(EXTRA_ALL_REDUCE), "evaluated-count")
    assert "rank 0 makes `all_reduce` at line 14, a call the other ranks never make" in count.why
    assert "rank 1's `all_reduce` at line 15" in count.why
    assert count.fix.startswith("the `all_reduce` at line 14 is an extra call that only rank 0 makes: remove it")
    assert count.condition_line == 14


RANK_ZERO_SIZE = """
import functools

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if dist.get_rank() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped


@rank_zero_only
def count_labels():
    return 7


class Head(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.out = nn.Linear(16, n)


def worker():
    n = count_labels()
    model = DDP(Head(n))
    return model
"""


def test_diverged_module_from_a_rank_zero_only_value_raises_before_ddp() -> None:
    """C2: on the ranks where the decorated function returns None, nn.Linear(16, None) raises TypeError; those
    ranks never reach DDP, so no rank holds parameters of another shape."""
    (module,) = of_kind(findings(RANK_ZERO_SIZE), "diverged-module")
    assert "building the module raises TypeError" in module.why
    assert "before `DDP(...)` is reached" in module.why
    assert "parameters of different shapes" not in module.why
    two_sizes = RANK_ZERO_SIZE.replace("    n = count_labels()\n", "    n = 7 if dist.get_rank() == 0 else 5\n")
    (sized,) = of_kind(findings(two_sizes), "diverged-module")  # two integers: the shapes do differ
    assert "parameters of different shapes" in sized.why


ALWAYS_TRUE = """
import torch
import torch.distributed as dist

WORLD_SIZE = {world}


def worker():
    rank = dist.get_rank()
    t = torch.ones(1)
    if rank in ([0, rank] if rank else [0, 1]):
        dist.all_reduce(t)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_branch_is_quiet_when_every_rank_of_the_stated_world_takes_it() -> None:
    """C3: the test holds on ranks 0, 1 and 2 of WORLD_SIZE = 3: no rank skips the all_reduce."""
    assert not of_kind(findings(ALWAYS_TRUE.format(world=3)), "branch")
    loud = ALWAYS_TRUE.format(world=3).replace("[0, rank] if rank else [0, 1]", "[0, 1]")  # rank 2 skips it
    assert [f.line for f in of_kind(findings(loud), "branch")] == [12]


NONZERO_ROWS = """
import torch
import torch.distributed as dist


def score(batch):
    scores = batch.sum(1)
    picked = (scores > 0.5).nonzero().flatten().tolist()
    for i in picked:
        row = batch[i].clone()
        dist.all_reduce(row)
    return scores
"""


def test_data_dependent_count_over_rows_advises_agreeing_on_the_count() -> None:
    """M1: a loop over nonzero() rows has no keys to agree on: agree on the count (all_reduce MAX) and pad."""
    (count,) = of_kind(findings(NONZERO_ROWS), "data-dependent-count")
    assert "per item of `picked`" in count.why
    assert "all_reduce the local count with ReduceOp.MAX" in count.fix
    assert "keys" not in count.fix


GROUP_SRC = """
import torch
import torch.distributed as dist


def scatter_rows(group):
    t = torch.zeros(2)
    src = dist.get_rank(group)
    if src == 0:
        dist.scatter(t, [torch.ones(2)] * dist.get_world_size(group), src=src, group=group)
    else:
        dist.scatter(t, None, src=0, group=group)
"""


def test_group_rank_fix_cites_what_140827_is() -> None:
    """U1: pytorch/pytorch#140827 is "[C10D] Support group_dst in scatter/gather (+object) ops"; torch 2.13's own
    source is what shows which keyword each call takes."""
    found = of_kind(findings(GROUP_SRC), "group-rank")
    assert found, [f.kind for f in findings(GROUP_SRC)]
    fix = found[0].fix
    assert 'pytorch/pytorch#140827 "Support group_dst in scatter/gather (+object) ops"' in fix
    assert "torch 2.13's distributed_c10d.py" in fix


FILE_BARRIER = """
import os
import time

import torch
import torch.distributed as dist

LIMIT_S = 8.0


def file_barrier(rank, world_size, folder):
    open(os.path.join(folder, f"rank_{rank}"), "w").close()
    start = time.monotonic()
    while True:
        seen = sum(os.path.isfile(os.path.join(folder, f"rank_{i}")) for i in range(world_size))
        if seen >= world_size:
            break
        if TEST:
            raise TimeoutError("file barrier timed out")
        time.sleep(0.5)


def worker(folder):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    file_barrier(rank, world_size, folder)
    t = torch.ones(1)
    dist.all_reduce(t)
    dist.barrier()
"""


def test_a_file_barriers_own_timeout_is_no_early_exit() -> None:
    """The file barrier that file-race's fix leads to: its timeout is how long a wait takes, which lint does not
    check, so the collectives after it are not flagged; a raise on the rank in the same loop still is."""
    assert findings(FILE_BARRIER.replace("TEST", "time.monotonic() - start > LIMIT_S")) == []
    ranked = findings(FILE_BARRIER.replace("TEST", "rank == 1 and time.monotonic() - start > LIMIT_S"))
    assert {f.line for f in of_kind(ranked, "early-exit")} == {27, 28}


def test_module_lint_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    """`python -m barrierlab.lint FILE | head -1` ended with a BrokenPipeError traceback."""
    lines = ["import torch.distributed as dist", "", "", "def worker():", "    rank = dist.get_rank()"]
    lines += [f"    if rank == {i % 2}:\n        dist.barrier()" for i in range(300)]  # ~145 kB of report
    script = tmp_path / "many.py"
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "barrierlab.lint", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as head does
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert first.startswith(b"300 ")
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code == 1
