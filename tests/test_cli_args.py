"""Every argument of ``barrierlab run`` and ``report`` is checked before anything starts: a bad one ends the
command with argparse's one-line error and exit status 2, never a traceback and never after a whole run; the
timeline is written where the command says."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from barrierlab.__main__ import TIMELINE_FORMATS, main

SCRIPT = """
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text(SCRIPT)
    return str(path)


def _refused(argv, capsys) -> str:
    """The error line of a command argparse refused (exit status 2)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    return captured.err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run", "no_such_scenario"], "no such scenario or script: 'no_such_scenario'"),
        (["run", "uneven_data", "-n", "0"], "argument -n/--nproc: must be between 1 and 16 ranks, got 0"),
        (["run", "uneven_data", "-n", "17"], "between 1 and 16 ranks, got 17"),
        (["run", "uneven_data", "-n", "two"], "must be a whole number of ranks, got 'two'"),
        (["run", "uneven_data", "--timeout", "nan"], "argument --timeout: must be a positive, finite number"),
        (["run", "uneven_data", "--timeout", "inf"], "got inf"),
        (["run", "uneven_data", "--timeout", "1e9"], "must be at most 3600 seconds"),
        (["run", "uneven_data", "--deadline", "0"], "argument --deadline: must be a positive, finite number"),
        (["run", "uneven_data", "--deadline", "soon"], "must be a number of seconds, got 'soon'"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_status_2(argv, says, capsys):
    line = _refused(argv, capsys)
    assert line.startswith("barrierlab run: error: ") and says in line, line


def test_a_folder_given_as_scenario_is_refused_as_such(tmp_path, capsys):
    line = _refused(["run", str(tmp_path)], capsys)
    assert "a folder without a __main__.py, not a script" in line


def test_a_folder_with_a_main_is_a_script_as_for_python_and_torchrun(tmp_path):
    """attack15 a12: `python appdir` and torchrun run a folder's __main__.py; barrierlab refused it."""
    from barrierlab.script import check_script, is_script

    (tmp_path / "__main__.py").write_text("pass\n")
    assert is_script(str(tmp_path)) and check_script(str(tmp_path)) == str(tmp_path)


@pytest.mark.parametrize("command", ["run", "report"])
@pytest.mark.parametrize(
    "name, says",
    [
        ("out.xyz", ".xyz is not a figure format matplotlib writes"),
        ("missing/out.png", "does not exist"),
        ("a-folder", "is a folder: give a file name"),
        ("a-fifo.png", "exists and is not a regular file"),
    ],
)
def test_a_bad_timeline_is_refused_before_anything_runs(tmp_path, script, command, name, says, capsys):
    (tmp_path / "a-folder").mkdir()
    os.mkfifo(tmp_path / "a-fifo.png")
    first = script if command == "run" else str(tmp_path)
    line = _refused([command, first, "--timeline", str(tmp_path / name)], capsys)
    assert line.startswith(f"barrierlab {command}: error: argument --timeline: ") and says in line, line


def test_the_timeline_formats_are_matplotlibs():
    from matplotlib.backend_bases import FigureCanvasBase

    assert set(TIMELINE_FORMATS) == set(FigureCanvasBase.get_supported_filetypes())


@pytest.mark.timeout(240)
def test_a_timeline_without_an_extension_is_written_and_named_as_png(tmp_path, script):
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", "run", script, "-n", "2", "--timeline", str(tmp_path / "figure")],
        capture_output=True,
        text=True,
        timeout=200,
        env=dict(os.environ, BARRIERLAB_LIVE="0"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"timeline written to {tmp_path / 'figure.png'}" in done.stdout
    assert (tmp_path / "figure.png").stat().st_size > 1000
