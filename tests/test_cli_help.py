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
