"""`barrierlab --help` and each command's help read as plain text: no reStructuredText or Markdown markup."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("command", [[], ["list"], ["run"], ["report"], ["lint"]], ids=lambda c: " ".join(c) or "-")
def test_help_is_plain_text(command):
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", *command, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "usage: barrierlab" in done.stdout
    assert "`" not in done.stdout, done.stdout


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path):
    """`barrierlab lint . | head` closed the pipe and lint ended with a BrokenPipeError traceback."""
    source = tmp_path / "many.py"
    source.write_text(
        "import torch.distributed as dist\n"
        + "".join(f"def f{i}(rank):\n    if rank == 0:\n        dist.barrier()\n" for i in range(300))
    )
    lint = subprocess.Popen(
        [sys.executable, "-m", "barrierlab", "lint", str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert lint.stdout.readline().startswith(b"300 ")
    lint.stdout.close()  # what head does after its first line
    _, err = lint.communicate(timeout=60)
    assert b"BrokenPipeError" not in err and b"Traceback" not in err, err.decode(errors="replace")
