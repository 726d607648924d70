"""``barrierlab run train.py -n N -- ARGS``: an ordinary training script, run as torchrun would run it
(issue 12, item 9), with barrierlab's deadline, recording, diagnosis, ledger and timeline."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from barrierlab.script import is_script, run_script

TRAIN = """\
import argparse
import os
import sys

import torch
import torch.distributed as dist
from proc_sockets import beyond_loopback  # tests/proc_sockets.py: the test puts tests/ on PYTHONPATH

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=1)
parser.add_argument("--bug", action="store_true")
parser.add_argument("--exit-code", type=int, default=None)


def main():
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    total = torch.zeros(1)
    for _ in range(args.steps):
        t = torch.ones(1)
        dist.all_reduce(t)
        total += t
    if args.bug and rank == 0:
        dist.barrier()  # the rank-0-only barrier
    exposed = beyond_loopback([os.getpid(), os.getppid(), int(os.environ["BL_TEST_KERNEL_PID"])])
    print(f"rank {rank} env={os.environ['RANK']}/{os.environ['WORLD_SIZE']} argv={sys.argv[1:]} "
          f"total={total.item():g} exposed={exposed}")
    if args.exit_code is not None and rank == 1:
        sys.exit(args.exit_code)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _line(path, text):
    with open(path) as f:
        return next(i for i, line in enumerate(f, start=1) if text in line)


@pytest.fixture
def train(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    return path


def _cli(*args, cwd=None, **variables):
    tests = os.path.dirname(os.path.abspath(__file__))  # for the script's `from proc_sockets import ...`
    env = dict(
        os.environ,
        **variables,
        BL_TEST_KERNEL_PID="0",
        PYTHONPATH=os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p),
    )
    command = [
        sys.executable,
        "-c",
        "import os, sys; os.environ['BL_TEST_KERNEL_PID'] = str(os.getpid()); "
        "from barrierlab.__main__ import main; sys.exit(main(sys.argv[1:]))",
        *map(str, args),
    ]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=cwd)
    return done, time.monotonic() - start


def test_a_correct_script_runs_on_every_rank_with_its_arguments_and_exits_0(train, tmp_path):
    done, _ = _cli("run", train, "-n", "3", "--timeline", tmp_path / "t.png", "--", "--steps", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(3):
        assert f"rank {rank} env={rank}/3 argv=['--steps', '2'] total=6 exposed=[]" in done.stdout, done.stdout
    assert "All 3 ranks finished" in done.stdout
    assert "all_reduce" in done.stdout  # the ledger
    assert (tmp_path / "t.png").stat().st_size > 0


def test_a_hanging_script_ends_within_its_deadline_names_the_line_and_exits_1(train):
    done, elapsed = _cli("run", train, "-n", "2", "--timeout", "2", "--deadline", "6", "--", "--bug")
    assert done.returncode == 1, done.stdout + done.stderr
    assert elapsed < 60
    assert f"train.py:{_line(train, '# the rank-0-only barrier')}" in done.stdout, done.stdout
    assert "<frozen runpy>" not in done.stdout and "<dynamic-code>" not in done.stdout


def test_sys_exit_with_a_nonzero_code_on_one_rank_is_a_failure(train):
    done, _ = _cli("run", train, "-n", "2", "--", "--exit-code", "3")
    assert done.returncode == 1, done.stdout + done.stderr


def test_sys_exit_0_is_a_normal_end(train):
    done, _ = _cli("run", train, "-n", "2", "--", "--exit-code", "0")
    assert done.returncode == 0, done.stdout + done.stderr


SHARE_A_FILE = """\
import argparse
import os
import time

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--workdir", required=True)
parser.add_argument("--fixed", action="store_true")


def main():
    args = parser.parse_args()
    dist.init_process_group("gloo")
    path = os.path.join(args.workdir, "vocab.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:  # the write
            f.write("a b c")
    else:
        time.sleep(0.3)  # "long enough": the order comes from the clock
    if args.fixed:
        dist.barrier()
    with open(path) as f:  # the read
        words = f.read().split()
    assert words == ["a", "b", "c"]
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_races_names_the_racing_lines_of_a_script_that_succeeded_and_exits_1(tmp_path):
    script = tmp_path / "share.py"
    script.write_text(SHARE_A_FILE)
    done, _ = _cli("run", script, "-n", "3", "--races", "--timeline", tmp_path / "t.png", "--", "--workdir", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 finished" in done.stdout and "raced" in done.stdout, done.stdout  # the diagnosis says it too
    write, read = _line(script, "# the write"), _line(script, "# the read")
    for rank in (1, 2):
        assert (
            f"- rank {rank} read `vocab.txt` at share.py, line {read}" in done.stdout
            and f"after rank 0 opened it for writing at share.py, line {write}" in done.stdout
        ), done.stdout
    assert "Races (" in done.stdout and "): 2\n" in done.stdout, done.stdout
    assert "On GPUs (NCCL" in done.stdout
    assert (tmp_path / "t.png").stat().st_size > 0


def test_races_finds_none_when_a_barrier_orders_the_read_and_says_what_nccl_keeps(tmp_path):
    script = tmp_path / "share.py"
    script.write_text(SHARE_A_FILE)
    done, _ = _cli("run", script, "-n", "3", "--races", "--", "--workdir", tmp_path, "--fixed")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "that no call orders): none" in done.stdout and "raced" not in done.stdout, done.stdout
    assert "ordered (a change of a file before another rank's use of it): 2" in done.stdout, done.stdout
    assert "file handoffs ordered on gloo, not on NCCL: none" in done.stdout, (
        done.stdout
    )  # a barrier blocks NCCL's host


LATIN1_NAME = """\
import os, sys, time
import torch.distributed as dist

dist.init_process_group("gloo")
path = os.path.join(sys.argv[1], b"donn\\xe9es.txt".decode("utf-8", "surrogateescape"))  # os.fsdecode's name
if dist.get_rank() == 0:
    with open(path, "w") as f:  # the write
        f.write("1 2 3")
else:
    time.sleep(0.3)
    with open(path) as f:  # the read
        f.read()
    raise ValueError(f"could not parse {path}")
"""


def test_races_and_errors_naming_a_file_whose_name_is_not_utf8_print_on_a_utf8_terminal(tmp_path):
    """attack11 a19: a race naming a file with a Latin-1 byte in its name (Python names it with a lone
    surrogate) ended ``--races`` in a UnicodeEncodeError traceback; the surrogate is shown as repr shows it."""
    script = tmp_path / "latin1.py"
    script.write_text(LATIN1_NAME)
    done, _ = _cli("run", script, "-n", "2", "--races", "--", tmp_path, PYTHONIOENCODING="utf-8")
    assert done.returncode == 1 and "Traceback (most recent call last)" not in done.stderr, done.stdout + done.stderr
    assert "rank 1 read `donn\\udce9es.txt` at latin1.py, line" in done.stdout, done.stdout
    assert "ValueError: could not parse" in done.stdout and "donn\\udce9es.txt" in done.stdout, done.stdout


def test_a_missing_script_is_a_clear_error(tmp_path):
    done, _ = _cli("run", tmp_path / "nope.py")
    assert done.returncode == 2 and "no such script" in done.stderr


def test_scenario_names_are_not_scripts():
    assert is_script("train.py") and not is_script("early_return")


def test_run_script_in_process(train, monkeypatch):
    monkeypatch.setenv("BL_TEST_KERNEL_PID", str(os.getpid()))
    run = run_script(train, 2, ["--steps", "3"])
    assert run.ok, run
    assert "argv=['--steps', '3'] total=6 exposed=[]" in run[1].stdout
    with pytest.raises(TypeError, match="argv"):
        run_script(train, 2, "--steps 3")


def test_a_script_that_imports_a_module_next_to_it(tmp_path, monkeypatch):
    (tmp_path / "helper_next_to_it.py").write_text(
        textwrap.dedent("""
        import os
        RANK = int(os.getenv("RANK", -1))
    """)
    )
    (tmp_path / "main_script.py").write_text(
        textwrap.dedent("""
        import torch.distributed as dist
        import helper_next_to_it
        dist.init_process_group("gloo")
        assert helper_next_to_it.RANK == dist.get_rank()
        dist.destroy_process_group()
    """)
    )
    run = run_script(tmp_path / "main_script.py", 2)
    assert run.ok, f"{run}\n{[r.traceback for r in run]}"


#: Lightning's shape: the script passes its own timeout (30 minutes) to init_process_group.
OWN_TIMEOUT = """\
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=1800))
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
print(f"group timeout {backend.options._timeout.total_seconds():g} s")
dist.destroy_process_group()
"""


@pytest.fixture
def own_timeout(tmp_path):
    path = tmp_path / "own_timeout.py"
    path.write_text(OWN_TIMEOUT)
    return path


def test_timeout_replaces_the_timeout_a_script_passes_to_init_process_group_and_says_so(own_timeout):
    done, _ = _cli("run", own_timeout, "-n", "2", "--timeout", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("group timeout 4 s") == 2, done.stdout
    assert "the script asked for 1800 s (init_process_group(timeout=...)); --timeout 4 overrides it" in done.stdout


def test_without_timeout_the_scripts_own_timeout_stays(own_timeout):
    run = run_script(own_timeout, 2)
    assert run.ok, run
    assert [r.stdout.strip() for r in run] == ["group timeout 1800 s"] * 2
    assert "overrides" not in run[0].stderr


def test_timeout_given_to_run_script_replaces_the_scripts_own(own_timeout):
    run = run_script(own_timeout, 2, timeout=3)
    assert run.ok, run
    assert [r.stdout.strip() for r in run] == ["group timeout 3 s"] * 2
    assert "the script asked for 1800 s" in run[0].stderr and "asked for" not in run[1].stderr


DCP_ON_RANK_0 = """
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
    if dist.get_rank() == 0:
        dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(sys.argv[1], "step-1"))  # rank 0 only
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_script_saving_with_dcp_on_rank_0_only_is_named_at_its_dcp_save_line(tmp_path):
    script = tmp_path / "save.py"
    script.write_text(DCP_ON_RANK_0)
    done, _ = _cli("run", script, "-n", "2", "--timeout", "2", "--deadline", "8", "--", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    line = _line(script, "# rank 0 only")
    headline = next(text for text in done.stdout.splitlines() if text.startswith("dcp.save is a collective"))
    assert headline.startswith("dcp.save is a collective every rank must call: rank 0 called it at ")
    assert f"save.py:{line}, in main: dcp.save(" in headline
    # the script imported DCP before recording started, so barrierlab's own wrapper of dcp.save is on the
    # stack too: the ledger still says that DCP, not the script, made the collective
    assert f"DCP's all_gather @ line {line}" in done.stdout, done.stdout


DCP_EVERY_RANK = """
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def main():
    dist.init_process_group("gloo")
    ckpt = os.path.join(sys.argv[1], "ckpt")
    dcp.save({"model": torch.nn.Linear(4, 2).state_dict()}, checkpoint_id=ckpt)
    restored = {"model": torch.nn.Linear(4, 2).state_dict()}
    dcp.load(restored, checkpoint_id=ckpt)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_script_where_every_rank_saves_and_loads_with_dcp_has_no_races(tmp_path):
    """attack24 a02: DCP imported before recording started wraps dcp.save as one write of the folder per rank,
    which raced with the other ranks' (the shards and metadata inside are recorded one by one)."""
    script = tmp_path / "train.py"
    script.write_text(DCP_EVERY_RANK)
    (tmp_path / "out").mkdir()
    done, _ = _cli("run", script, "-n", "2", "--races", "--deadline", "60", "--", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "that no call orders): none" in done.stdout and "raced" not in done.stdout, done.stdout


def test_the_script_runner_waits_for_preloading_only_for_scripts_that_need_it(tmp_path):
    from barrierlab.script import needs_preloaded

    plain, ddp = tmp_path / "plain.py", tmp_path / "ddp.py"
    plain.write_text("import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.barrier()\n")
    ddp.write_text("from torch.nn.parallel import DistributedDataParallel as DDP\n")
    assert not needs_preloaded(plain)
    assert needs_preloaded(ddp)
    assert needs_preloaded(os.path.join(os.path.dirname(__file__), "..", "notebooks", "capstone", "train.py"))


def test_a_script_folder_with_its_own_hmac_and_traceback_modules_still_runs(tmp_path):
    """attack8: modules named like the standard library's that barrierlab needs after the script ran (``hmac`` to
    seal the outcome, ``traceback`` to format an error), in the script's folder, which heads ``sys.path`` while
    the script runs: they were imported in place of the real ones and every rank ended with code 70, where
    torchrun exits 0. The script itself never imports them."""
    for name in ("hmac", "traceback"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('the learner\\'s own module was imported')\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.barrier()\nprint('done')\n"
    )
    done, _ = _cli("run", script, "-n", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All 2 ranks finished" in done.stdout, done.stdout


REEXEC = """\
import os, sys
if os.environ.get("TRAIN_REEXEC") != "1":  # set before torch loads, as some launch wrappers do
    os.environ["TRAIN_REEXEC"] = "1"
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
rank = dist.get_rank()
print("rank", rank, "ok after re-exec")
dist.destroy_process_group()
sys.exit(int(sys.argv[1]) if rank == 1 and sys.argv[1:] else 0)
"""


@pytest.mark.timeout(240)
def test_a_script_that_re_executes_itself_is_judged_by_how_the_new_program_ends(tmp_path):
    """attack8 a9: torchrun exits 0; the run said each rank "did not finish … after 0 collective calls" (the
    exec'd program writes no outcome). The program is still the rank: its exit status is the rank's outcome,
    and the run says the rank replaced itself (so nothing of the program was recorded)."""
    script = tmp_path / "reexec.py"
    script.write_text(REEXEC)
    run = run_script(script, 2, deadline=120)
    assert run.ok, run
    assert all("ok after re-exec" in r.stdout for r in run), run
    assert all(any("replaced itself with another program" in n for n in r.record_notes) for r in run)
    run = run_script(script, 2, ["3"], deadline=120)
    assert [r.status for r in run] == ["finished", "exited"] and run[1].exit_code == 3, run
    assert "replaced itself" in str(run) and "reexec.py 3" in str(run), run


def test_a_module_run_with_m_ends_as_python_m_ends_it(tmp_path, monkeypatch):
    """``barrierlab run -m pkg.train`` (attack19 a10) shares the script's ending: its own ``os._exit(0)`` is a
    normal end with the outcome written (attack15 a04 for scripts), and an uncaught exception goes to
    ``sys.excepthook`` with the traceback from the module's own frame."""
    from barrierlab.script import run_module

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helper.py").write_text("X = 42\n")
    (tmp_path / "pkg" / "quick.py").write_text(
        "import os\nfrom . import helper\nprint('X', helper.X, flush=True)\nos._exit(0)\n"
    )
    (tmp_path / "pkg" / "fails.py").write_text("def load():\n    raise ValueError('no config')\n\nload()\n")
    monkeypatch.chdir(tmp_path)
    quick = run_module("pkg.quick", 2, deadline=60)
    assert [str(r.status) for r in quick] == ["finished", "finished"], quick
    assert all("X 42" in r.stdout for r in quick), quick
    fails = run_module("pkg.fails", 2, deadline=60)
    assert [str(r.status) for r in fails] == ["raised", "raised"], fails
    assert all("in load" in r.stderr and "ValueError: no config" in r.stderr for r in fails), fails[0].stderr


HANGS_AND_SAYS_WHO = """\
import os
import sys
import time

import torch.distributed as dist

dist.init_process_group("gloo")
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}"), "w") as f:
    f.write(f"{os.getpid()} {os.getppid()}")
if dist.get_rank() == 0:
    time.sleep(3600)
dist.barrier()
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_command_killed_mid_run_takes_its_warm_process_and_ranks_with_it(tmp_path):
    """The command line forks its warm process from itself (one torch import, not two at once): killed with
    SIGKILL while its ranks hang, it must still leave no rank and no warm process behind."""
    (tmp_path / "hang.py").write_text(HANGS_AND_SAYS_WHO)
    command = [sys.executable, "-m", "barrierlab", "run", "hang.py", "-n", "2", "--deadline", "60", "--", str(tmp_path)]
    cli = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        give_up = time.monotonic() + 60
        while not all((tmp_path / f"rank{r}").exists() for r in (0, 1)) and time.monotonic() < give_up:
            time.sleep(0.05)
        time.sleep(0.2)  # both ranks have written their line
        pids = {int(p) for r in (0, 1) for p in (tmp_path / f"rank{r}").read_text().split()}
        assert len(pids) == 3 and cli.pid not in pids, pids  # two ranks and the warm process that forked them
    finally:
        cli.kill()
        cli.wait(timeout=10)
    give_up = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "left behind after the command was killed"
