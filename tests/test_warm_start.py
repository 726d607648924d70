"""The warm process starts early: with the kernel (the lab's IPython extension, ``barrierlab_kernel``), or at
``import barrierlab``; barrierlab adopts the one already started; preloading waits while the kernel is busy."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import pytest
from jupyter_client.manager import start_new_kernel

import barrierlab_kernel
from barrierlab import _warm

EXTENSION_THEN_IMPORT = textwrap.dedent("""
    import sys
    import barrierlab_kernel
    barrierlab_kernel.load_ipython_extension(None)
    started = sys.modules["barrierlab._warmstart"].early
    print("torch imported by the extension:", "torch" in sys.modules)
    print("barrierlab imported by the extension:", "barrierlab" in sys.modules)
    import barrierlab as bl
    from barrierlab import launch
    bl.warm_up()
    print("adopted the same process:", launch._warm.process.pid == started.pid)
    print("values:", bl.run(lambda: 7, 2).values)
""")


def test_the_extension_starts_the_warm_process_without_importing_torch_and_barrierlab_adopts_it():
    done = subprocess.run(
        [sys.executable, "-c", EXTENSION_THEN_IMPORT],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "BARRIERLAB_EAGER": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "torch imported by the extension: False" in done.stdout
    assert "barrierlab imported by the extension: False" in done.stdout
    assert "adopted the same process: True" in done.stdout
    assert "values: [7, 7]" in done.stdout


def test_the_extension_does_nothing_when_eager_start_is_off():
    code = (
        "import sys, barrierlab_kernel\nbarrierlab_kernel.load_ipython_extension(None)\n"
        "print('started:', 'barrierlab._warmstart' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BARRIERLAB_EAGER": "0"},
    )
    assert done.returncode == 0 and "started: False" in done.stdout, done.stderr


@pytest.mark.timeout(180)
def test_a_kernel_with_the_extension_has_its_warm_process_before_any_cell_imports_barrierlab():
    manager, client = start_new_kernel(
        kernel_name="python3",
        extra_arguments=["--InteractiveShellApp.extensions=['barrierlab_kernel']"],
        env={**os.environ, "BARRIERLAB_LIVE": "0", "BARRIERLAB_EAGER": "1"},
    )
    try:
        reply = client.execute_interactive(
            "import sys, psutil\n"
            "print('children:', [' '.join(p.cmdline())[-30:] for p in psutil.Process().children()])\n"
            "print('imported:', 'barrierlab' in sys.modules, 'torch' in sys.modules)",
            timeout=60,
            output_hook=_collect(lines := []),
        )
        assert reply["content"]["status"] == "ok"
        text = "".join(lines)
        assert "_warm import main; main()" in text, text
        assert "imported: False False" in text, text
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _collect(lines: list[str]):
    def hook(message):
        if message["msg_type"] == "stream":
            lines.append(message["content"]["text"])

    return hook


def test_install_writes_the_kernel_config_once_and_uninstall_removes_only_its_own(tmp_path):
    path = barrierlab_kernel.install(str(tmp_path))
    with open(path) as f:
        text = f.read()
    assert text.startswith(barrierlab_kernel.MARKER) and 'extensions.append("barrierlab_kernel")' in text
    assert barrierlab_kernel.install(str(tmp_path)) == path  # already there: left as it is
    assert barrierlab_kernel.uninstall(str(tmp_path)) == path and not os.path.exists(path)
    assert barrierlab_kernel.uninstall(str(tmp_path)) is None


def test_install_refuses_to_overwrite_a_config_it_did_not_write(tmp_path):
    path = barrierlab_kernel.config_path(str(tmp_path))
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("c.InteractiveShellApp.exec_lines = ['x = 1']\n")
    with pytest.raises(SystemExit, match="was not written by barrierlab"):
        barrierlab_kernel.install(str(tmp_path))
    assert barrierlab_kernel.uninstall(str(tmp_path)) is None
    with open(path) as f:
        assert f.read() == "c.InteractiveShellApp.exec_lines = ['x = 1']\n"


class _Clock:
    def __init__(self):
        self.now = 100.0

    def monotonic(self):
        return self.now


def test_preloading_waits_until_the_kernel_has_been_idle_and_not_longer_than_its_limit(monkeypatch):
    clock, kernel = _Clock(), {"state": "R", "ticks": 0}
    monkeypatch.setattr(_warm.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(_warm._contain, "state_and_ticks", lambda pid: (kernel["state"], kernel["ticks"]))
    tick = 1 / os.sysconf("SC_CLK_TCK")
    activity = _warm._Activity(pid=1, give_up_after=5.0)

    def look(state: str, cpu_share: float) -> float:
        clock.now += _warm.KERNEL_LOOK
        kernel["state"] = state
        kernel["ticks"] += round(cpu_share * _warm.KERNEL_LOOK / tick)
        return activity.idle_for()

    assert look("R", 0.9) == 0.0  # the kernel imports torch
    assert look("R", 0.1) == 0.0  # runnable but starved of CPU on a loaded machine: still busy
    assert look("D", 0.0) == 0.0  # reading a file
    assert look("S", 0.8) == 0.0  # asleep at the look, but it worked since the last one
    assert look("S", 0.0) == 0.0  # idle from now on
    assert look("S", 0.0) == pytest.approx(_warm.KERNEL_LOOK)
    for _ in range(round(_warm.PRELOAD_AFTER_IDLE / _warm.KERNEL_LOOK)):
        idle = look("S", 0.0)
    assert idle >= _warm.PRELOAD_AFTER_IDLE  # the learner reads: preloading may start
    assert look("R", 1.0) == 0.0  # the next cell: the next module waits
    clock.now += 5.0  # waited long enough in all: preload even though the kernel is busy
    kernel["ticks"] += 1000
    assert activity.idle_for() == math.inf


def test_a_parent_that_is_gone_does_not_hold_preloading_back(monkeypatch):
    monkeypatch.setattr(_warm._contain, "state_and_ticks", lambda pid: None)
    assert _warm._Activity(pid=1, give_up_after=5.0).idle_for() == math.inf


PRELOADED = textwrap.dedent("""
    import sys, time
    import barrierlab as bl
    seen, give_up = None, time.monotonic() + 120
    while seen != [[True, False]] * 2 and time.monotonic() < give_up:  # preloading goes on between runs
        seen = bl.run(lambda: [m in sys.modules for m in ("xml.dom.minidom", "wave")], 2).values
        time.sleep(0.5)
    print("in the ranks:", seen)
""")


def test_modules_named_in_barrierlab_preload_are_imported_once_by_the_warm_process():
    """A learner's own module that imports a large library makes each rank import it in every run; named in
    BARRIERLAB_PRELOAD, the library is already in every rank (forked from the warm process)."""
    env = {**os.environ, "BARRIERLAB_PRELOAD": "xml.dom.minidom, not a module,"}
    done = subprocess.run([sys.executable, "-c", PRELOADED], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    assert "in the ranks: [[True, False], [True, False]]" in done.stdout
    assert "BARRIERLAB_PRELOAD: 'not a module' is not a module name; skipped" in done.stderr


def test_preload_names_are_read_from_the_environment():
    assert _warm.modules_to_preload({}) == _warm.PRELOAD
    extra = _warm.modules_to_preload({"BARRIERLAB_PRELOAD": "pytest, torch.nn,pytest"})
    assert extra == (*_warm.PRELOAD, "pytest")
