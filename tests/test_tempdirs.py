"""A run's private folder is removed on every path, and folders of dead kernels are removed at the next start
(never one of a live process, never a symlink, never another user's)."""

from __future__ import annotations

import glob
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab import _contain, launch
from barrierlab._protocol import run_dir_owner, run_dir_prefix

pytestmark = pytest.mark.usefixtures("no_leftovers")


def my_run_dirs() -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), run_dir_prefix(os.getpid(), launch._my_start()) + "*"))


def test_run_folders_name_their_owner_and_are_removed_after_a_run():
    assert run_dir_owner(os.path.basename(run_dir_prefix(12, 34) + "abc_9")) == (12, 34)
    assert run_dir_owner("barrierlab-run-x") is None and run_dir_owner("barrierlab-save-1") is None
    run = bl.run(lambda: 1, 2)
    assert run.ok and my_run_dirs() == []


@pytest.mark.timeout(120)
def test_the_folder_is_removed_when_the_warm_process_dies_mid_run():
    def kill_the_warm_process():
        if dist.get_rank() == 0:
            os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(1000)

    run = bl.run(kill_the_warm_process, 2, timeout=5, deadline=10)
    assert run.statuses == [bl.Status.KILLED] * 2 and run.launcher_note, run
    assert my_run_dirs() == []
    assert bl.run(lambda: dist.get_rank(), 2).values == [0, 1]


@pytest.mark.parametrize("bad", [{"deadline": math.inf}, {"timeout": math.inf}, {"deadline": 1e10}])
def test_refused_inputs_create_no_folder(bad):
    with pytest.raises(ValueError):
        bl.run(lambda: 1, 2, **bad)
    assert my_run_dirs() == []


def test_a_ctrl_c_during_cleanup_is_delivered_after_the_folder_is_gone(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    (folder / "deep").mkdir(parents=True)
    for i in range(50):
        (folder / "deep" / f"f{i}").write_text("x")
    real_rmtree = shutil.rmtree  # what _files.remove_tree calls

    def interrupted_rmtree(path, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while removing
        time.sleep(0.05)
        real_rmtree(path, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", interrupted_rmtree)
    with pytest.raises(KeyboardInterrupt):
        launch._remove_run_dir(str(folder))
    assert not folder.exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_folder_of_a_sigkilled_kernel_is_removed_by_its_warm_process(tmp_path):
    """The warm process sees its kernel die (its pipe closes, it is re-parented) and removes the kernel's run
    folders: a SIGKILLed kernel no longer leaves its folder until the next kernel's first run."""
    script = textwrap.dedent(f"""
        import os, time, barrierlab as bl
        def hang():
            open(os.path.join({str(tmp_path)!r}, "started"), "w").close()
            time.sleep(1000)
        bl.run(hang, 2, timeout=60, deadline=60)
    """)
    private = tmp_path / "tmp"  # where no other kernel's start removes it (other test sessions share /tmp)
    private.mkdir()
    kernel = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(private)})
    try:
        give_up = time.monotonic() + 90
        while not (tmp_path / "started").exists() and time.monotonic() < give_up:
            time.sleep(0.05)
        assert (tmp_path / "started").exists()
        left = glob.glob(os.path.join(private, f"barrierlab-run-{kernel.pid}-*"))
        assert len(left) == 1
        kernel.kill()
        kernel.wait()
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.wait()
    give_up = time.monotonic() + 30  # the warm process first kills and reaps the ranks
    while os.path.exists(left[0]) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert not os.path.exists(left[0])


def test_folders_of_dead_kernels_are_removed_at_the_next_start(tmp_path):
    ended = subprocess.Popen(["sleep", "30"])
    dead = (ended.pid, _contain.start_time(ended.pid))
    ended.kill()
    ended.wait()
    stale = tempfile.mkdtemp(prefix=run_dir_prefix(*dead))
    (Path(stale) / "rank0.outcome").write_text("x")
    # a live process's folder (ours), a symlink named like a run folder, a folder of another name: all kept
    live = tempfile.mkdtemp(prefix=run_dir_prefix(os.getpid(), launch._my_start()))
    target = tmp_path / "target"
    target.mkdir()
    link = os.path.join(tempfile.gettempdir(), run_dir_prefix(dead[0], 1) + "link")
    os.symlink(target, link)
    try:
        removed = launch.remove_stale_run_dirs()
        assert stale in removed and not os.path.exists(stale)
        assert os.path.isdir(live) and os.path.islink(link) and target.is_dir()
        assert live not in removed and link not in removed
    finally:
        shutil.rmtree(stale, ignore_errors=True)
        os.rmdir(live)
        os.unlink(link)


def test_the_stale_folder_check_uses_pid_and_start_time():
    start = _contain.start_time(os.getpid())
    assert start is not None and start == launch._my_start()
    assert _contain.start_time(os.getpid()) != start + 1
