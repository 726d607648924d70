"""Helpers for attack13 repros: run a script under `python -m barrierlab run` in a temp dir that is removed."""

import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def barrierlab(*args, timeout=120, cwd=None):
    env = {**os.environ, "PYTHONPATH": SRC, "BARRIERLAB_LIVE": "0"}
    return subprocess.run(
        [sys.executable, "-m", "barrierlab", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


class TempDir:
    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="a13-")
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
