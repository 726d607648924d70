"""Whatever a script can use, a rank can use (issue 12, items 3 and 4).

The learner's own modules are written to ``tmp_path`` and imported in this process, as a notebook would
import them; each rank then imports them fresh from their files, with torchrun's environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import textwrap

import pytest

import barrierlab as bl

HELPER = """\
import dataclasses
import enum
import functools
import os

import torch
import torch.distributed as dist

RANK = int(os.getenv("RANK", -1))
ENV = {name: os.environ.get(name) for name in (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_USE_AGENT_STORE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID")}
ELASTIC = dist.is_torchelastic_launched()


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Config:
    n: int = 3
    color: Color = Color.RED


@functools.lru_cache(maxsize=None)
def table(n):
    return tuple(range(n))


@functools.cache
def square(n):
    return n * n


def module_rank():
    return RANK, dist.get_rank()


def environment():
    return ENV


def elastic():
    return ELASTIC, dist.is_torchelastic_launched()


def work(config=Config()):
    return table(config.n), square(dist.get_rank()), config.color, Config(n=config.n + dist.get_rank())


def only_rank_zero_waits():
    if RANK == 0:
        dist.barrier()  # the line that waits
    return RANK


def fails():
    raise ValueError("raised in the helper")
"""


def _learners_module(tmp_path, monkeypatch, name: str, text: str):
    """Write ``text`` as module ``name`` in a folder on sys.path and import it in this process; it is dropped
    from sys.modules when the test ends (the generator's second step)."""
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


@pytest.fixture
def helper(tmp_path, monkeypatch):
    """A learner's module ``blhelper_<n>`` on sys.path, imported in this process (RANK unset here)."""
    monkeypatch.delenv("RANK", raising=False)
    yield from _learners_module(tmp_path, monkeypatch, f"blhelper_{os.getpid()}_{len(sys.modules)}", HELPER)


def _line_of(module, text: str) -> int:
    with open(module.__file__) as f:
        return next(i for i, line in enumerate(f, start=1) if text in line)


def test_module_level_code_sees_each_ranks_rank(helper):
    assert helper.RANK == -1  # in this process
    run = bl.run(helper.module_rank, 3)
    assert run.ok, run
    assert run.values == [(0, 0), (1, 1), (2, 2)]


def test_every_rank_has_torchruns_environment_on_loopback(helper):
    run = bl.run(helper.environment, 2)
    assert run.ok, run
    for rank, env in enumerate(run.values):
        assert env["RANK"] == env["LOCAL_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
        assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0
        assert env["TORCHELASTIC_USE_AGENT_STORE"] == "True"


def test_every_rank_has_the_rest_of_torch_elastics_worker_environment(helper):
    """torch 2.13's elastic agent (``LocalElasticAgent._start_workers``) also sets GROUP_WORLD_SIZE, ROLE_NAME and
    TORCHELASTIC_RUN_ID, whose presence ``dist.is_torchelastic_launched()`` checks (Lightning's
    ``TorchElasticEnvironment.detected()`` calls it): it was False under barrierlab, True under torchrun (attack10
    a15)."""
    run = bl.run(helper.environment, 2)
    assert run.ok, run
    for rank, env in enumerate(run.values):
        assert env["GROUP_RANK"] == "0" and env["GROUP_WORLD_SIZE"] == "1"
        assert env["ROLE_NAME"] == "default" and env["ROLE_RANK"] == str(rank) and env["ROLE_WORLD_SIZE"] == "2"
        assert env["TORCHELASTIC_RESTART_COUNT"] == env["TORCHELASTIC_MAX_RESTARTS"] == "0"
    assert run.values[0]["TORCHELASTIC_RUN_ID"] and len({env["TORCHELASTIC_RUN_ID"] for env in run.values}) == 1
    assert bl.run(helper.elastic, 2).values == [(True, True)] * 2


def test_a_rank_zero_only_branch_at_module_level_runs_on_rank_zero_only(helper):
    run = bl.run(helper.only_rank_zero_waits, 2, timeout=1, deadline=4)
    assert not run.ok  # rank 0 waits in a barrier rank 1 never makes: the bug is visible, not hidden
    assert run.values[1] == 1 if run[1].status == "finished" else True
    stuck_line = _line_of(helper, "# the line that waits")
    assert f"{os.path.basename(helper.__file__)}:{stuck_line}" in str(run.diagnosis), run.diagnosis


def test_lru_cache_dataclass_and_enum_from_the_learners_module(helper):
    run = bl.run(helper.work, 2, args=(helper.Config(n=2, color=helper.Color.BLUE),))
    assert run.ok, run
    for rank, (table, square, color, config) in enumerate(run.values):
        assert table == (0, 1) and square == rank * rank
        assert color is helper.Color.BLUE  # the kernel's own member, not a copy
        assert type(config) is helper.Config and config == helper.Config(n=2 + rank)


def test_a_module_loaded_from_a_file_path(tmp_path):
    folder = tmp_path / "elsewhere"  # on no sys.path entry
    folder.mkdir()
    name = f"blpathmod_{os.getpid()}"
    (folder / "helpers.py").write_text(HELPER)
    spec = importlib.util.spec_from_file_location(name, folder / "helpers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        run = bl.run(module.work, 2)
        assert run.ok, run
        assert run.values[1][2] is module.Color.RED
        run = bl.run(module.module_rank, 2)
        assert run.values == [(0, 0), (1, 1)]
    finally:
        sys.modules.pop(name, None)


def test_frames_in_the_learners_file_show_their_real_file_and_line(helper):
    run = bl.run(helper.fails, 2)
    traceback = run[0].traceback
    assert f'File "{helper.__file__}", line {_line_of(helper, "raised in the helper")}' in traceback, traceback
    assert "<dynamic-code>" not in traceback and "<dynamic-code>" not in str(run.diagnosis)


def test_where_a_rank_waits_in_the_learners_file_is_its_real_file_and_line(helper):
    # rank 1 stays alive (linger), so rank 0 waits until the deadline stops it and its stack is taken
    run = bl.run(helper.only_rank_zero_waits, 2, timeout=3, deadline=1.5, linger=True)
    stuck = run.stuck.get(0)
    assert stuck is not None and stuck.site is not None, run
    assert (stuck.site.file, stuck.site.line) == (helper.__file__, _line_of(helper, "# the line that waits"))
    assert "<dynamic-code>" not in str(run.diagnosis)


def test_a_file_edited_since_the_kernel_imported_it_is_what_the_ranks_run(helper):
    with open(helper.__file__, "a") as f:
        f.write("\ndef module_rank():\n    return 'edited', RANK\n")
    run = bl.run(helper.module_rank, 2)
    assert run.values == [("edited", 0), ("edited", 1)]


# --------------------------------------------------------------------------- init=False (tutorial code)

TUTORIAL = """\
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

from proc_sockets import LOOPBACK, listening  # tests/proc_sockets.py


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    init_process_group("gloo", rank=rank, world_size=world_size)


def demo_basic(rank, world_size):
    setup(rank, world_size)
    model = DDP(nn.Linear(4, 2))
    model(torch.randn(8, 4)).sum().backward()
    t = torch.ones(1) * rank
    dist.all_reduce(t)
    seen = listening([os.getpid(), os.getppid(), KERNEL_PID])
    exposed = [address for address in seen if address not in LOOPBACK]
    destroy_process_group()
    return t.item(), (exposed, len(seen))


KERNEL_PID = int(os.environ.get("BL_TEST_KERNEL_PID", "0"))


def tcp_url(rank, world_size):
    dist.init_process_group("gloo", init_method="tcp://0.0.0.0:23456", rank=rank, world_size=world_size)
    return dist.get_world_size()


def wrong_rank(rank, world_size):
    dist.init_process_group("gloo", rank=world_size - 1 - rank, world_size=world_size)
"""


@pytest.fixture
def tutorial(tmp_path, monkeypatch):
    monkeypatch.setenv("BL_TEST_KERNEL_PID", str(os.getpid()))
    yield from _learners_module(tmp_path, monkeypatch, f"bltutorial_{os.getpid()}", TUTORIAL)


def test_tutorial_code_that_sets_up_its_own_group_runs_unchanged(tutorial):
    run = bl.run(tutorial.demo_basic, 3, args=(3,), init=False)
    assert run.ok, f"{run}\n{run.diagnosis}"
    assert [value for value, _ in run.values] == [3.0, 3.0, 3.0]
    for _, (exposed, listening) in run.values:  # seen from inside each rank while the group and store are up
        assert exposed == [], exposed
        assert listening >= 1  # the launcher's store (in the kernel) and gloo's own sockets were seen
    assert "12355" not in str(run)


def test_recording_works_when_the_learner_initialises(tutorial):
    run = bl.run(tutorial.demo_basic, 2, args=(2,), init=False, record=True)
    assert run.ok
    assert "all_reduce" in str(run.diagnosis) or "all_reduce" in run.ledger(), run.diagnosis


def test_a_tcp_url_of_the_learners_own_is_re_pointed_at_the_launchers_store(tutorial):
    run = bl.run(tutorial.tcp_url, 2, args=(2,), init=False)
    assert run.ok, run
    assert run.values == [2, 2]


def test_a_rank_the_learners_code_disagrees_about_is_a_clear_error(tutorial):
    run = bl.run(tutorial.wrong_rank, 2, args=(2,), init=False, timeout=2)
    assert not run.ok
    assert "init_process_group(rank=1) on a rank that barrierlab started as rank 0 of 2" in run[0].error_message


def test_init_must_be_true_or_false():
    with pytest.raises(TypeError, match="init must be True or False"):
        bl.run(print, 2, init="no")


def test_notebook_style_function_still_goes_by_value():
    namespace: dict = {"__name__": "__main__"}
    exec(
        textwrap.dedent("""
        import os
        def f():
            return int(os.environ["RANK"])
    """),
        namespace,
    )
    run = bl.run(namespace["f"], 2)
    assert run.values == [0, 1]


# --------------------------------------------------------------------------- a hang in teardown (item 5)

TEARDOWN = '''\
import time

import torch.distributed as dist


class HangsWhenDestroyed:
    """Stands in for torch's teardown hanging after the function returned (a DDP reducer or process group
    whose destructor waits on a peer that is gone)."""

    def __del__(self):
        time.sleep(3600)


def returns_then_hangs_in_teardown():
    keep = HangsWhenDestroyed()
    dist.barrier()
    return dist.get_rank() * 10
'''


def test_a_destructor_that_would_hang_never_runs_the_rank_ends_once_its_outcome_is_written(tmp_path, monkeypatch):
    # the function's objects are never destroyed: the rank ends with os._exit (torch's teardown of a process
    # group can deadlock, tests/test_rank_teardown.py), so this stand-in's __del__ never runs
    name = f"blteardown_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(TEARDOWN)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    try:
        run = bl.run(module.returns_then_hangs_in_teardown, 2, timeout=20, deadline=25)
    finally:
        sys.modules.pop(name, None)
    assert run.ok, run
    assert run.values == [0, 10]
    assert [r.teardown_hung for r in run] == [False, False]
    assert run.elapsed < 15  # not held up by the destructor, nor ended at the 25 s deadline


# --------------------------------------------------------------------------- file accesses of a notebook cell

CELL_FILE_ACCESSES = """
import json, tempfile
from IPython.core.interactiveshell import InteractiveShell
from barrierlab import ordering
shell = InteractiveShell.instance()
shell.run_cell("import os\\nimport torch.distributed as dist\\nimport barrierlab as bl", store_history=True)
shell.run_cell(
    "def write_then_read(folder):\\n"
    "    path = os.path.join(folder, 'vocab.txt')\\n"
    "    if dist.get_rank() == 0:\\n"
    "        with open(path, 'w') as f:\\n"
    "            f.write('the a of')\\n"
    "    dist.barrier()\\n"
    "    with open(path) as f:\\n"
    "        return f.read()\\n",
    store_history=True,
)
shell.user_ns["folder"] = tempfile.mkdtemp()
shell.run_cell("run = bl.run(write_then_read, 2, args=(folder,))", store_history=True)
run = shell.user_ns["run"]
accesses = sorted(ordering.order(run).accesses(), key=lambda a: (a.rank, a.event.start))
barrier = next(e for e in run[0].events if e.name == "barrier")
print(json.dumps({
    "ok": run.ok,
    "accesses": [[a.rank, a.how, a.where()] for a in accesses],
    "barrier": barrier.where,
}))
"""


def test_file_accesses_in_a_notebook_cell_are_named_by_cell_and_line_as_collectives_are(tmp_path):
    """In a kernel, the cell's ``open`` is IPython's guard around it (``_modified_open``), which cloudpickle
    sends by value: it used to be the recorded site of every file access, "<dynamic-code>, line 339"."""
    pytest.importorskip("IPython")
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", CELL_FILE_ACCESSES],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "IPYTHONDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["ok"], found
    assert found["barrier"].startswith("cell In[2], line 6, in write_then_read"), found
    assert found["accesses"] == [
        [0, "write", "cell In[2], line 4"],
        [0, "read", "cell In[2], line 7"],
        [1, "read", "cell In[2], line 7"],
    ], found
