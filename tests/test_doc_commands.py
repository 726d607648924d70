"""Every shell command in the README's and docs/'s code blocks works as written on a fresh clone.

Each command either runs a make target or names the environment's programs by path (``.venv/bin/...``), so it
needs no activated environment. The commands that can run here are run, in order, in a ``git clone`` of this
repository whose ``.venv`` is a link to the environment running the tests (nothing is installed) and whose
``src/`` comes first on PYTHONPATH; each is bounded by a timeout and must exit with the code its comment states
(``# exits 1``), otherwise 0. The commands that cannot run here are listed with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.S | re.M)
#: How a command may start: a make target, the environment's programs by path, or plain shell.
ALLOWED_START = re.compile(r"^(?:[A-Z_]+=\S+ )*(?:make\b|\.venv/bin/|srun \.venv/bin/|export\b|cd\b|[a-z_]+=\$\()")
COMMAND_TIMEOUT = 300.0  # one command, on the loaded 2-core machine

#: Why a command cannot run here (first match wins).
SKIPS = [
    (re.compile(r"^make (lab|test|setup|clean)\b"), "installs an environment or starts a long-running server"),
    (re.compile(r"\$SLURM|\$JOB_ID|/shared/|--nnodes|^srun |scontrol"), "needs a cluster (several nodes, Slurm)"),
    (re.compile(r"^export |^[a-z_]+=\$\("), "sets a variable for the cluster commands around it"),
]


@dataclass
class Command:
    page: str
    text: str
    expected: int

    def __str__(self) -> str:
        return f"{self.page}: {self.text}"


def commands_in(text: str, page: str) -> list[Command]:
    """Shell commands of the page's code blocks: continuation lines joined, comment-only lines dropped."""
    found = []
    for block in SHELL_BLOCK.findall(text):
        for line in re.sub(r"\\\n\s*", "", block).splitlines():
            code, _, comment = line.partition(" #")
            code = code.strip()
            if not code or code.startswith("#"):
                continue
            exits = re.search(r"\bexits (\d+)", comment)
            found.append(Command(page, code, int(exits[1]) if exits else 0))
    return found


def all_commands() -> list[Command]:
    return [c for page in PAGES for c in commands_in(page.read_text(), str(page.relative_to(ROOT)))]


def skip_reason(command: Command) -> str | None:
    for pattern, reason in SKIPS:
        if pattern.search(command.text):
            return reason
    if "torchrun" in command.text and not _loopback_namespace():
        return "torchrun's rendezvous store listens on every interface; no loopback-only namespace (unshare -n)"
    return None


def _loopback_namespace() -> bool:
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True) if shutil.which("unshare") else None
    return done is not None and done.returncode == 0


def run_in(clone: Path, command: Command) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(clone / "src"), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    env.pop("BARRIERLAB_RECORD_DIR", None)
    argv = ["bash", "-c", command.text]
    if "torchrun" in command.text:
        argv = ["unshare", "-n", "bash", "-c", "ip link set lo up && " + command.text]
    return subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of this repository's HEAD, its .venv a link to this environment."""
    target = tmp_path_factory.mktemp("fresh") / "barrierlab"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True, timeout=120)
    (target / ".venv").symlink_to(sys.prefix)
    return target


def test_every_command_needs_no_activated_environment():
    loose = [str(c) for c in all_commands() if not ALLOWED_START.match(c.text)]
    assert not loose, "commands that need an activated environment (use make or .venv/bin/...):\n" + "\n".join(loose)


def test_the_pages_have_commands_to_check():
    assert any(c.text.startswith(".venv/bin/barrierlab") for c in all_commands())


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_command_that_can_run_here_works(clone, record_property):
    ran, skipped, failed = [], [], []
    for command in all_commands():
        reason = skip_reason(command)
        if reason:
            skipped.append(f"{command}  [skipped: {reason}]")
            continue
        done = run_in(clone, command)
        ran.append(str(command))
        if done.returncode != command.expected:
            failed.append(
                f"{command}\n  exit {done.returncode}, expected {command.expected}\n  "
                + (done.stderr or done.stdout)[-1500:].replace("\n", "\n  ")
            )
    print("ran:\n  " + "\n  ".join(ran) + "\nskipped:\n  " + "\n  ".join(skipped))
    record_property("ran", len(ran))
    record_property("skipped", len(skipped))
    assert ran, "no command could run here"
    assert not failed, "commands that do not work as written:\n" + "\n".join(failed)


def test_a_broken_example_fails_the_check(clone):
    """The check is not a formality: a misspelt command, run the same way, is reported."""
    page = "```bash\n.venv/bin/barrierlab lsit   # a typo\n.venv/bin/barrierlab list\n```\n"
    broken, good = commands_in(page, "example.md")
    assert run_in(clone, broken).returncode != broken.expected
    assert run_in(clone, good).returncode == good.expected
    assert not ALLOWED_START.match("python -m barrierlab list")
