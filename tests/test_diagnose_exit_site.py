"""A rank whose code calls sys.exit() (corpus34's Megatron item, NVIDIA/Megatron-LM PR #367: a shard that fails to
load exits through sys.exit() after a print only rank 0 makes) is named at the line that exited, like a raise."""

from __future__ import annotations

import pytest

import barrierlab as bl


def load_shard(rank):
    import sys

    if rank == 1:
        sys.exit()  # the line the diagnosis names


def loads_then_meets():
    import torch.distributed as dist

    load_shard(dist.get_rank())
    dist.barrier()


@pytest.mark.timeout(120)
def test_an_exited_rank_is_named_where_it_called_sys_exit():
    run = bl.run(loads_then_meets, 2, timeout=5)
    assert run[1].status == "exited" and run[1].exit_code == 0
    assert run[1].traceback.rstrip().endswith("SystemExit")
    line = load_shard.__code__.co_firstlineno + 4
    assert f"rank 1 failed by itself (exited at tests/test_diagnose_exit_site.py:{line}, in load_shard: sys.exit()" in (
        run.diagnosis.headline
    ), run.diagnosis.headline
