"""lint34a: point-to-point calls handed a transposed view (``p2p-noncontiguous``), and the rank tracer running
nested functions and a ``batch_isend_irecv`` of an empty list (the rank raises there).

Each buggy program is linted and must be flagged at its line; its correct twin must stay quiet. The runs check
what the findings say happens on gloo (2 ranks, short timeouts)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from barrierlab.lint import lint_source

# --------------------------------------------------------------------------- p2p-noncontiguous

NONCONTIGUOUS = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist


    def worker():
        rank = dist.get_rank()
        outputs = []
        for step in range(2):
            if rank == 0:
                hidden = torch.arange(12.0).reshape(3, 4) + step
                wire = hidden.transpose(0, 1)
                dist.send(wire, dst=1)
                outputs.append(wire)
            else:
                buf = torch.empty(4, 3)
                dist.recv(buf, src=0)
                outputs.append(buf)
        for wire in outputs:
            dist.all_reduce(wire.t())
        return [o.sum().item() for o in outputs]


    if __name__ == "__main__":
        dist.init_process_group("gloo")
        worker()
        dist.destroy_process_group()
    """
)

#: the twin: the view made contiguous before the send
NONCONTIGUOUS_FIXED = NONCONTIGUOUS.replace("hidden.transpose(0, 1)\n", "hidden.transpose(0, 1).contiguous()\n")


def _noncontiguous(source: str) -> list:
    return [f for f in lint_source(source) if f.kind == "p2p-noncontiguous"]


def test_send_of_a_transposed_view_is_flagged_at_the_send():
    found = _noncontiguous(NONCONTIGUOUS)
    assert [(f.line, f.condition_line) for f in found] == [(12, 11)]
    assert "input tensor has to be contiguous" in found[0].why
    assert "hidden.transpose(0, 1)" in found[0].fix


def test_contiguous_twin_and_collectives_of_views_are_quiet():
    assert not _noncontiguous(NONCONTIGUOUS_FIXED)  # the all_reduce of wire.t() stays quiet too


def _exchange(call: str, other: str) -> str:
    """Rank 0 makes ``call``, rank 1 the matching ``other``."""
    return (
        "import torch\nimport torch.distributed as dist\n\n"
        "def f(x):\n"
        "    if dist.get_rank() == 0:\n"
        f"        {call}\n"
        "    else:\n"
        f"        {other}\n"
    )


RECV = "dist.recv(torch.empty(4, 3), src=0)"
SEND = "dist.send(torch.ones(4, 3), dst=0)"


@pytest.mark.parametrize(
    ("call", "other"),
    [
        ("dist.send(x.t(), dst=1)", RECV),
        ("dist.isend(x.T, dst=1).wait()", RECV),
        ("dist.recv(x.permute(1, 0), src=1)", SEND),
        ("dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.transpose(x, 0, 1), 1)])[0].wait()", RECV),
        ("dist.send(x.transpose(0, 1).detach(), dst=1)", RECV),
    ],
)
def test_each_swapping_view_is_flagged(call, other):
    assert [f.line for f in _noncontiguous(_exchange(call, other))] == [6]


@pytest.mark.parametrize(
    ("call", "other"),
    [
        ("dist.send(x.transpose(1, 1), dst=1)", RECV),  # a dimension with itself: the same tensor
        ("dist.send(x.permute(0, 1), dst=1)", RECV),  # every dimension in place
        ("dist.send(x.t().contiguous(), dst=1)", RECV),
        ("dist.recv(x.t().clone().contiguous(), src=1)", SEND),
        ("dist.all_reduce(x.t())", "dist.all_reduce(x)"),  # collectives copy a non-contiguous input
        ("dist.broadcast(x.T, src=0)", "dist.broadcast(x, src=0)"),
    ],
)
def test_views_that_keep_the_layout_and_collectives_are_quiet(call, other):
    assert not _noncontiguous(_exchange(call, other))


def test_a_name_rebound_before_the_send_is_not_taken_for_the_view():
    source = textwrap.dedent(
        """\
        import torch.distributed as dist

        def f(x, flag):
            wire = x.t()
            if flag:
                wire = wire.contiguous()
            dist.send(wire, dst=1)
            for wire in [x]:
                dist.send(wire, dst=1)
            wire = x.t()
            wire = wire.contiguous()
            dist.send(wire, dst=1)
        """
    )
    assert not _noncontiguous(source)


def test_a_name_bound_in_the_loop_body_before_the_send_is_followed():
    source = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist

        def f(xs):
            wire = xs[0]
            for x in xs:
                if dist.get_rank() == 0:
                    dist.send(wire, dst=1)
                    wire = x.t()
                    dist.send(wire, dst=1)
                else:
                    dist.recv(torch.empty(4, 3), src=0)
                    dist.recv(torch.empty(4, 3), src=0)
        """
    )
    # the first send reads `wire` from before the loop or from the previous trip (a view then: unknown, quiet);
    # the second reads the view just bound
    assert [f.line for f in _noncontiguous(source)] == [10]


def _module(tmp_path, monkeypatch, name: str, source: str):
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_run_the_send_of_a_view_raises_on_the_sender(tmp_path, monkeypatch):
    import barrierlab as bl

    buggy = _module(tmp_path, monkeypatch, "lint34a_noncontiguous_buggy", NONCONTIGUOUS)
    run = bl.run(buggy.worker, 2, timeout=10, deadline=60)
    assert "input tensor has to be contiguous" in run[0].error_message
    assert "Connection closed by peer" in run[1].error_message  # its recv: the sender's process ended
    fixed = _module(tmp_path, monkeypatch, "lint34a_noncontiguous_fixed", NONCONTIGUOUS_FIXED)
    run = bl.run(fixed.worker, 2, timeout=10, deadline=60)
    assert run.ok


# --------------------------------------------------------------------------- nested functions, empty batches

PIPELINE = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist


    def communicate(stage, send_next=None, recv_prev=False):
        ops = []
        buf = None
        if recv_prev:
            buf = torch.empty(4)
            ops.append(dist.P2POp(dist.irecv, buf, stage - 1))
        if send_next is not None:
            ops.append(dist.P2POp(dist.isend, send_next, stage + 1))
        reqs = dist.batch_isend_irecv(ops)
        for req in reqs:
            req.wait()
        return buf


    def train_step(stage, num_stages, steps):
        def forward(i):
            if stage == 0:
                return torch.ones(4) * i
            return None

        for i in range(steps):
            out = forward(i)
            send = out if stage < num_stages - 1 else None
            communicate(stage, send_next=send, recv_prev=stage > 0)
        return steps


    def worker():
        stage, num_stages = dist.get_rank(), dist.get_world_size()
        train_step(stage, num_stages, 2)
        dist.barrier()
        return stage


    if __name__ == "__main__":
        dist.init_process_group("gloo")
        worker()
        dist.destroy_process_group()
    """
)

#: the twin: an empty list of ops makes no call
PIPELINE_FIXED = PIPELINE.replace(
    "        reqs = dist.batch_isend_irecv(ops)\n", "        reqs = dist.batch_isend_irecv(ops) if ops else []\n"
)
#: the same program with the nested function written at module level: the trace went through it before lint34a
PIPELINE_FLAT = PIPELINE.replace(
    "    def forward(i):\n        if stage == 0:\n            return torch.ones(4) * i\n        return None\n\n", ""
).replace("out = forward(i)", "out = torch.ones(4) * i if stage == 0 else None")


def _p2p(source: str) -> list:
    return [f for f in lint_source(source) if f.kind.startswith("p2p-")]


#: stage 0 hands nothing to send: its list of ops is empty (it receives nothing either), stage 1 receives
UNSENT = PIPELINE.replace("send = out if stage < num_stages - 1 else None", "send = None")


def test_a_rank_handing_batch_isend_irecv_no_op_raises_and_its_peer_waits():
    found = _p2p(UNSENT)
    # stage 0 raises in batch_isend_irecv([]) at line 13 on its first step; stage 1 waits in its irecv's wait()
    assert [(f.line, f.kind) for f in found] == [(15, "p2p-unmatched")]
    assert "rank 0 meanwhile raises at line 13" in found[0].why and "IndexError" in found[0].why
    assert "keep rank 0 from raising at line 13" in found[0].fix


def test_the_twins_are_quiet():
    assert not _p2p(PIPELINE)  # on 2 ranks every list of ops holds one op: stage 0 an isend, stage 1 an irecv
    assert not _p2p(PIPELINE_FIXED)


def test_nested_function_is_run_by_the_trace():
    """Before lint34a the trace stopped at the nested ``def`` (a ``return`` in it); now a call runs it as a
    closure, reading ``stage`` from the enclosing function: the same finding as for the program with no nested
    function."""
    flat = PIPELINE_FLAT.replace("send = out if stage < num_stages - 1 else None", "send = None")
    assert [f.line for f in _p2p(flat)] == [f.line for f in _p2p(UNSENT)] == [15]
    # the closure's value reaches the caller: stage 0's forward returns a tensor, so its list holds the isend
    assert not _p2p(PIPELINE)


def test_a_closure_reads_the_enclosing_names_at_its_call():
    source = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist


        def worker():
            rank = dist.get_rank()
            peer = 1

            def target():
                return peer

            peer = 0 if rank == 1 else 1
            if rank == 0:
                dist.send(torch.ones(1), dst=target())
                dist.send(torch.ones(1), dst=target())
            else:
                dist.recv(torch.ones(1), src=target())


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            worker()
            dist.destroy_process_group()
        """
    )
    found = _p2p(source)
    # rank 0 sends twice, rank 1 receives once: the second send is never answered
    assert [(f.line, f.kind) for f in found] == [(15, "p2p-unmatched")]
    twice = "        dist.send(torch.ones(1), dst=target())\n" * 2
    assert twice in source
    assert not _p2p(source.replace(twice, twice[: len(twice) // 2]))


def test_run_the_empty_batch_raises_index_error(tmp_path, monkeypatch):
    import barrierlab as bl

    mod = _module(tmp_path, monkeypatch, "lint34a_empty_batch", UNSENT)
    run = bl.run(mod.worker, 2, timeout=5, deadline=60)
    assert run[0].error_message.startswith("IndexError")
    assert run[1].status != "finished"
    fixed = _module(tmp_path, monkeypatch, "lint34a_pipeline", PIPELINE)
    run = bl.run(fixed.worker, 2, timeout=5, deadline=60)
    assert run.values == [0, 1]


# --------------------------------------------------------------------------- own-port

OWN_PORT = textwrap.dedent(
    """\
    import socket
    from datetime import timedelta

    import torch.distributed as dist


    def free_port():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    def connect(port, rank, world):
        return dist.TCPStore("127.0.0.1", port, world, is_master=(rank == 0), timeout=timedelta(seconds=3))


    def worker():
        rank, world = dist.get_rank(), dist.get_world_size()
        port = free_port()
        store = connect(port, rank, world)
        store.set(f"k{rank}", "1")
        dist.barrier()
        return rank
    """
)

#: the twin: rank 0 picks the port, the others get it from a broadcast
OWN_PORT_FIXED = OWN_PORT.replace(
    "    port = free_port()\n",
    "    box = [free_port() if rank == 0 else None]\n    dist.broadcast_object_list(box, src=0)\n    port = box[0]\n",
)


def _kind(source: str, kind: str) -> list:
    return [f for f in lint_source(source) if f.kind == kind]


def test_a_store_port_each_rank_picks_for_itself_is_flagged():
    found = _kind(OWN_PORT, "own-port")
    assert [(f.line, f.condition_line) for f in found] == [(14, 19)]
    assert "free_port()" in found[0].why and "DistStoreError" in found[0].why


def test_own_port_twins_are_quiet():
    assert not _kind(OWN_PORT_FIXED, "own-port")
    # one store, its role written out (rank 0 alone makes it): not a rendezvous decided per rank
    assert not _kind(OWN_PORT.replace("is_master=(rank == 0)", "is_master=True"), "own-port")
    # the parent of mp.spawn picking MASTER_PORT once: no store or init_method given the port
    parent = OWN_PORT.replace("store = connect(port, rank, world)", "os.environ['MASTER_PORT'] = str(port)")
    assert not _kind(parent, "own-port")


def test_own_port_through_init_method():
    source = textwrap.dedent(
        """\
        import socket
        import torch.distributed as dist

        def free_port():
            s = socket.socket()
            s.bind(("", 0))
            port = s.getsockname()[1]
            s.close()
            return port

        def main(rank, world):
            port = free_port()
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
        """
    )
    # checked once with mp.spawn on 2 processes (bl.run gives init_method its own address): the master raised
    # 'DistStoreError: Timed out after 5 seconds waiting for clients. 1/2 clients joined.', the other's client
    # socket timed out connecting to the master's port
    assert [(f.line, f.condition_line) for f in _kind(source, "own-port")] == [(13, 12)]
    assert not _kind(source.replace("port = free_port()", "port = 29500"), "own-port")


def test_run_own_port_both_ranks_time_out(tmp_path, monkeypatch):
    import barrierlab as bl

    mod = _module(tmp_path, monkeypatch, "lint34a_own_port", OWN_PORT)
    run = bl.run(mod.worker, 2, timeout=10, deadline=60)
    assert "waiting for clients" in run[0].error_message
    assert "DistNetworkError" in run[1].error_message
    fixed = _module(tmp_path, monkeypatch, "lint34a_own_port_fixed", OWN_PORT_FIXED)
    run = bl.run(fixed.worker, 2, timeout=10, deadline=60)
    assert run.ok


# --------------------------------------------------------------------------- object-list-length

OBJECT_LIST = textwrap.dedent(
    """\
    import torch.distributed as dist


    def send_meta(step):
        meta = [("shape", step)]
        if step % 2 == 1:
            meta.append(("mask", step))
        dist.send_object_list(meta, dst=1)


    def recv_meta():
        meta = [None]
        dist.recv_object_list(meta, src=0)
        return meta[0]


    def worker():
        got = []
        for step in range(3):
            if dist.get_rank() == 0:
                send_meta(step)
            else:
                got.append(recv_meta())
        dist.barrier()
        return len(got)
    """
)

#: the twin: two fields always, the second None when absent, received into a list of two
OBJECT_LIST_FIXED = OBJECT_LIST.replace(
    '    meta = [("shape", step)]\n    if step % 2 == 1:\n        meta.append(("mask", step))\n',
    '    meta = [("shape", step), ("mask", step) if step % 2 == 1 else None]\n',
).replace("    meta = [None]\n", "    meta = [None] * 2\n")


def test_object_list_grown_under_a_test_is_flagged():
    found = _kind(OBJECT_LIST, "object-list-length")
    assert [(f.line, f.condition_line) for f in found] == [(8, 6)]
    assert "a list of 1 or 2 objects" in found[0].why and "16 vs 8" in found[0].why


def test_object_list_twins_are_quiet():
    assert OBJECT_LIST_FIXED != OBJECT_LIST
    assert not _kind(OBJECT_LIST_FIXED, "object-list-length")
    # the receiver's list long enough for the longer way: shorter messages are not judged
    assert not _kind(OBJECT_LIST.replace("meta = [None]\n", "meta = [None, None]\n"), "object-list-length")
    # a list the function changes otherwise (handed to a helper): its length unknown, quiet
    helper = OBJECT_LIST.replace('meta.append(("mask", step))', "fill(meta)")
    assert not _kind(helper, "object-list-length")


def test_run_object_list_receiver_aborts(tmp_path, monkeypatch):
    import barrierlab as bl

    mod = _module(tmp_path, monkeypatch, "lint34a_object_list", OBJECT_LIST)
    run = bl.run(mod.worker, 2, timeout=10, deadline=60)
    assert "op.preamble.length <= op.nbytes. 16 vs 8" in run[1].stderr
    assert "Connection reset by peer" in run[0].error_message
    fixed = _module(tmp_path, monkeypatch, "lint34a_object_list_fixed", OBJECT_LIST_FIXED)
    run = bl.run(fixed.worker, 2, timeout=10, deadline=60)
    assert run.ok


# --------------------------------------------------------------------------- symlink-exists

SYMLINK = textwrap.dedent(
    """\
    import os
    import os.path as osp
    import tempfile

    import torch
    import torch.distributed as dist


    class Runner:
        def __init__(self, work_dir):
            self.work_dir = work_dir
            self.epoch = 0

        def save(self, out_dir):
            filename = f"epoch_{self.epoch}.pth"
            torch.save({"epoch": self.epoch}, osp.join(out_dir, filename))
            dst_file = osp.join(out_dir, "latest.pth")
            os.symlink(filename, dst_file)

        def run(self):
            while self.epoch < 3:
                t = torch.ones(1)
                dist.all_reduce(t)
                self.epoch += 1
                if dist.get_rank() == 0:
                    self.save(self.work_dir)


    def worker():
        box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        Runner(box[0]).run()
        dist.barrier()
        return dist.get_rank()
    """
)

#: the twin: the link replaced
SYMLINK_FIXED = SYMLINK.replace(
    "        os.symlink(filename, dst_file)\n",
    "        if osp.lexists(dst_file):\n            os.remove(dst_file)\n        os.symlink(filename, dst_file)\n",
)


def test_symlink_made_again_each_trip_is_flagged():
    found = _kind(SYMLINK, "symlink-exists")
    assert [(f.line, f.condition_line) for f in found] == [(18, 21)]
    assert "FileExistsError" in found[0].why


def test_symlink_twins_are_quiet():
    assert not _kind(SYMLINK_FIXED, "symlink-exists")
    # a new link name every epoch: no clash
    per_epoch = SYMLINK.replace('osp.join(out_dir, "latest.pth")', 'osp.join(out_dir, f"latest_{self.epoch}.pth")')
    assert not _kind(per_epoch, "symlink-exists")
    # the folder changes every trip
    moving = SYMLINK.replace("self.save(self.work_dir)", "self.save(osp.join(self.work_dir, str(self.epoch)))")
    assert not _kind(moving, "symlink-exists")
    # called once, not in a loop
    once = SYMLINK.replace(
        "            if dist.get_rank() == 0:\n                self.save(self.work_dir)\n", ""
    ).replace("    Runner(box[0]).run()\n", "    r = Runner(box[0])\n    r.run()\n    r.save(box[0])\n")
    assert once.count("r.save(") == 1 and "self.save(" not in once
    assert not _kind(once, "symlink-exists")


def test_run_symlink_second_save_raises(tmp_path, monkeypatch):
    import barrierlab as bl

    mod = _module(tmp_path, monkeypatch, "lint34a_symlink", SYMLINK)
    run = bl.run(mod.worker, 2, timeout=10, deadline=60)
    assert run[0].error_message.startswith("FileExistsError")
    assert not run[1].ok  # it waited for rank 0 in the next all_reduce
    fixed = _module(tmp_path, monkeypatch, "lint34a_symlink_fixed", SYMLINK_FIXED)
    run = bl.run(fixed.worker, 2, timeout=10, deadline=60)
    assert run.ok


# --------------------------------------------------------------------------- unflushed-write

UNFLUSHED = textwrap.dedent(
    """\
    import json
    import os
    import tempfile

    import torch.distributed as dist


    def share(rank):
        if rank == 0:
            handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            json.dump({"a": 1, "b": 2}, handle)
            name = [handle.name]
        else:
            handle, name = None, [None]
        dist.broadcast_object_list(name, src=0)
        with open(name[0]) as f:
            table = json.load(f)
        dist.barrier()
        if rank == 0:
            handle.close()
            os.unlink(handle.name)
        return table


    def worker():
        return share(dist.get_rank())
    """
)

#: the twin: the file written in a with block, closed before the broadcast
UNFLUSHED_FIXED = UNFLUSHED.replace(
    '        handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)\n'
    '        json.dump({"a": 1, "b": 2}, handle)\n',
    '        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:\n'
    '            json.dump({"a": 1, "b": 2}, handle)\n',
)


def test_unflushed_write_before_the_broadcast_is_flagged():
    found = _kind(UNFLUSHED, "unflushed-write")
    assert [(f.line, f.condition_line) for f in found] == [(11, 15)]


def test_unflushed_twins_are_quiet():
    assert UNFLUSHED_FIXED != UNFLUSHED
    assert not _kind(UNFLUSHED_FIXED, "unflushed-write")
    flushed = UNFLUSHED.replace(
        "        name = [handle.name]\n", "        handle.flush()\n        name = [handle.name]\n"
    )
    assert not _kind(flushed, "unflushed-write")
    # a log written and never read by the program: nothing reads it after the collective
    log = textwrap.dedent(
        """\
        import torch.distributed as dist

        def train(steps):
            log = open("train.log", "w")
            for step in range(steps):
                log.write(f"{step}\\n")
                dist.barrier()
        """
    )
    assert not _kind(log, "unflushed-write")


def test_run_unflushed_file_is_read_empty(tmp_path, monkeypatch):
    import barrierlab as bl

    mod = _module(tmp_path, monkeypatch, "lint34a_unflushed", UNFLUSHED)
    run = bl.run(mod.worker, 2, timeout=10, deadline=60)
    # rank 0 reads its own unflushed file too, so it raises whatever the timing; rank 1 either reads it empty as
    # well or meets rank 0's ended process first ("Connection reset by peer", seen once under load)
    assert run[0].error_message.startswith("JSONDecodeError"), run
    assert run[1].error_message.startswith(("JSONDecodeError", "RuntimeError")), run
    fixed = _module(tmp_path, monkeypatch, "lint34a_unflushed_fixed", UNFLUSHED_FIXED)
    run = bl.run(fixed.worker, 2, timeout=10, deadline=60)
    assert run.ok
