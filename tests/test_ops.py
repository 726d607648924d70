"""The ops table against torch 2.13 itself: every public torch.distributed function is an op with a row or
named as not an op, every row exists in torch, and the recorder wraps exactly what the table says."""

import inspect
import subprocess
import sys

import pytest
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from barrierlab import ops, record


def _public_functions(module) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_") and inspect.isfunction(getattr(module, name))}


def test_every_public_torch_distributed_function_is_in_the_table_or_named_as_not_an_op():
    unknown = _public_functions(dist) - set(ops.BY_NAME) - ops.NOT_OPS
    assert not unknown, f"torch.distributed has functions the ops table does not know: {sorted(unknown)}"


def test_every_row_names_a_function_torch_has():
    for op in ops.OPS:
        module = dcp if op.kind == ops.CHECKPOINT else dist
        assert callable(getattr(module, op.name, None)), f"{op.name}: not in {module.__name__}"


def test_no_name_is_both_an_op_and_not_an_op():
    assert not set(ops.BY_NAME) & ops.NOT_OPS
    assert len(ops.BY_NAME) == len(ops.OPS), "a name has two rows"


def test_every_row_cites_where_its_facts_come_from():
    assert all(op.source for op in ops.OPS)


def test_ordering_columns_speak_only_of_the_rows_roles():
    for op in ops.OPS:
        for column in (op.gloo, op.nccl):
            assert set(column) <= set(op.roles), op.name
            assert set(column.values()) <= {"all", "root", "parent", "children", "peer", "none", None}, op.name


def test_every_nccl_entry_cites_torch_source():
    for op in ops.OPS:
        if op.nccl:
            assert op.nccl_source and ".py" in op.nccl_source, f"{op.name}: NCCL column without a citation"


def test_point_to_point_calls_are_never_numbered_nor_required_of_every_rank():
    for name in ops.POINT_TO_POINT_OPS:
        op = ops.BY_NAME[name]
        assert not op.numbered and not op.every_rank


def test_object_collectives_say_which_tensor_collectives_they_make():
    for op in ops.OPS:
        if op.kind == ops.OBJECT_COLLECTIVE:
            assert op.inner and all(inner in ops.BY_NAME for inner in op.inner), op.name
            assert op.underlying == op.inner[0]


def test_the_recorder_wraps_exactly_the_recorded_rows(tmp_path):
    record.start(str(tmp_path / "rank0.events"), 0)
    try:
        wrapped = {name for name in dir(dist) if hasattr(getattr(dist, name), "__barrierlab_original__")}
    finally:
        record.stop()
    assert wrapped == ops.NUMBERED | ops.RECORDED_P2P
    assert not {name for name in dir(dist) if hasattr(getattr(dist, name), "__barrierlab_original__")}


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_ops_that_wait_for_every_rank_are_collectives(backend):
    for name in ops.waits_for_every_rank(backend):
        assert ops.BY_NAME[name].every_rank, name


def test_an_unknown_backend_is_refused_by_name():
    with pytest.raises(ValueError, match="backend must be 'gloo' or 'nccl'"):
        ops.waits_for_every_rank("mpi")


def test_the_table_is_standard_library_only():
    """lint reads the table without torch: ops.py loaded on its own, in a fresh interpreter, imports none."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('ops', {ops.__file__!r})\n"
        "module = sys.modules['ops'] = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "print(len(module.OPS), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == [str(len(ops.OPS)), "False"]


def test_the_reducing_rows_are_the_calls_that_take_a_reduce_op():
    """``reduces`` (the diagnosis compares the ranks' ``op=`` on these rows) is what torch's signatures say."""
    for row in ops.OPS:
        function = getattr(dist, row.name, None)
        if function is None or not callable(function):
            continue
        try:
            takes = "op" in inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        assert row.reduces == takes, row.name
