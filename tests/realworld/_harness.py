"""Run the real-world items three ways — ``bl.run`` with recording, a real ``torchrun`` (or the script's own
``mp.spawn``), and ``barrierlab lint`` — and judge each outcome against the item's own markers.

The item format (every ``correct_*.py`` / ``buggy_*.py`` in this folder):

* a docstring naming the source it models, what it does and, for a buggy item, the bug;
* module constants ``KIND`` (``"correct"`` | ``"buggy"``), ``WORLD_SIZE``, ``TIMEOUT`` (the process-group
  timeout in seconds) and, for items that set up their own group as the DDP tutorial does,
  ``SELF_INIT = True``;
* ``worker()``: the rank's work, expecting an initialised default group (what ``bl.run`` calls), or, with
  ``SELF_INIT``, ``main(rank, world_size)`` as ``mp.spawn`` calls it;
* ``if __name__ == "__main__":`` — ``init_process_group("gloo")`` from torchrun's environment, ``worker()``,
  ``destroy_process_group()``; or, with ``SELF_INIT``, the script's own ``mp.spawn``;
* in a buggy item, ``# BUG`` at the end of the line that is the mistake and ``# WAITS`` at the end of every
  line of the item's own file that is on a waiting rank's stack when it waits: the call that waits and, in
  the item's functions above it, the calls that led there (a line may carry both markers).

Items are read with :mod:`ast` (nothing is imported to find their constants) and imported by module name
with this folder and ``_standins`` first on ``sys.path``; under torchrun ``_standins`` is on ``PYTHONPATH``.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Packages named like the libraries they stand in for (accelerate, deepspeed, ...): see _standins/README.md.
STANDINS = HERE / "_standins"
_MARKER = re.compile(r"#\s*(BUG|WAITS)\b")
#: Extra wall time ``bl.run`` gets beyond the group timeout before it stops the ranks.
LAB_MARGIN = 10.0  # a loaded machine (3 test workers on 2 cores) slowed a correct item past 3 s
#: Wall-clock bound for one torchrun / mp.spawn job: interpreter and torch start-up of every process on a
#: busy 2-core machine, plus the group timeout.
SCRIPT_DEADLINE = 90.0
SAME_CALLS = "every rank made the same collective calls"


@dataclass(frozen=True)
class Item:
    path: Path
    kind: str
    world_size: int
    timeout: float
    self_init: bool
    bug_lines: tuple[int, ...]
    wait_lines: tuple[int, ...]
    docstring: str

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def lines(self) -> set[int]:
        return set(self.bug_lines) | set(self.wait_lines)


def load(path: Path) -> Item:
    source = path.read_text()
    tree = ast.parse(source)
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    bug, wait = [], []
    for number, line in enumerate(source.splitlines(), start=1):
        code, hash_, comment = line.partition("#")
        for marker in _MARKER.findall(hash_ + comment):
            (bug if marker == "BUG" else wait).append(number)
    return Item(path, constants.get("KIND", ""), constants.get("WORLD_SIZE", 0), float(constants.get("TIMEOUT", 0)),
                bool(constants.get("SELF_INIT", False)), tuple(bug), tuple(wait), ast.get_docstring(tree) or "")


def discover() -> list[Item]:
    return [load(p) for p in sorted(HERE.glob("*.py")) if p.name.startswith(("correct_", "buggy_"))]


def use_standins() -> None:
    """Put this folder and the stand-ins first on ``sys.path`` (ranks started by ``bl.run`` inherit it)."""
    for folder in (STANDINS, HERE):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


def module(item: Item):
    use_standins()
    return importlib.import_module(item.name)


# --------------------------------------------------------------------------- bl.run


@dataclass
class LabOutcome:
    ok: bool
    statuses: list[str]
    elapsed: float
    deadline: float
    kind: str
    headline: str
    diagnosis: str
    named_lines: set[int] = field(default_factory=set)

    @property
    def bounded(self) -> bool:
        return self.elapsed <= self.deadline + 10.0  # launcher grace, stack dumps, collection on a busy machine


def run_in_lab(item: Item, record: bool = True) -> LabOutcome:
    """``bl.run(worker, N)``; a SELF_INIT item as its ``mp.spawn`` would: ``bl.run(main, N, args=(N,),
    init=False)``, its own init_process_group re-pointed at the launcher's loopback store."""
    import barrierlab as bl

    deadline = item.timeout + LAB_MARGIN
    start = time.monotonic()
    if item.self_init:
        run = bl.run(module(item).main, item.world_size, args=(item.world_size,), timeout=item.timeout,
                     deadline=deadline, record=record, init=False)
    else:
        run = bl.run(module(item).worker, item.world_size, timeout=item.timeout, deadline=deadline, record=record)
    elapsed = time.monotonic() - start
    return _lab_outcome(item, run, elapsed, deadline)


def run_with_script_runner(item: Item, record: bool = True) -> LabOutcome:
    """barrierlab's script runner (``barrierlab run item.py -n N``): the item's ``__main__`` on N ranks with
    torchrun's environment. A SELF_INIT item's ``__main__`` starts its own ranks with ``mp.spawn`` (which a
    runner rank must not do: they would listen on port 12355 of every interface), so it goes through the
    runner's other door, ``bl.run(main, N, args=(N,), init=False)``, as :func:`run_in_lab` does."""
    if item.self_init:
        return run_in_lab(item, record)
    from barrierlab.script import run_script

    use_standins()  # the ranks inherit sys.path, as torchrun's workers inherit PYTHONPATH
    deadline = item.timeout + LAB_MARGIN
    start = time.monotonic()
    run = run_script(item.path, item.world_size, timeout=item.timeout, deadline=deadline, record=record)
    return _lab_outcome(item, run, time.monotonic() - start, deadline)


def _lab_outcome(item: Item, run, elapsed: float, deadline: float) -> LabOutcome:
    diagnosis = run.diagnosis
    text = str(diagnosis)
    named = {int(n) for n in re.findall(rf"{re.escape(item.path.name)}:(\d+)", text)}
    site = diagnosis.site
    if site is not None and os.path.basename(site.file) == item.path.name:
        named.add(site.line)
    return LabOutcome(run.ok, list(run.statuses), elapsed, deadline, diagnosis.kind, diagnosis.headline, text,
                      named & item.lines)


# --------------------------------------------------------------------------- torchrun / mp.spawn


def isolated() -> bool:
    """Root with util-linux ``unshare`` and ``ip``: jobs run in a network namespace with loopback only, so
    torchrun's store (which listens on all interfaces) and the DDP tutorial's fixed port 12355 are reachable
    from nowhere else and never collide with another job."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@dataclass
class ScriptOutcome:
    returncode: int | None  # None: killed at SCRIPT_DEADLINE
    elapsed: float
    output: str

    @property
    def bounded(self) -> bool:
        return self.returncode is not None


def run_as_script(item: Item) -> ScriptOutcome:
    """``torchrun --standalone --nproc-per-node N item.py`` (or ``python item.py`` for a SELF_INIT item, which
    spawns its own ranks), in a private network namespace, bounded by SCRIPT_DEADLINE."""
    if item.self_init:
        command = [sys.executable, str(item.path)]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc-per-node={item.world_size}", str(item.path)]
    command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    python_path = os.pathsep.join(filter(None, [str(STANDINS), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONPATH=python_path)
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=SCRIPT_DEADLINE)
    except subprocess.TimeoutExpired:
        output = end_job(process)
        return ScriptOutcome(None, time.monotonic() - start, output)
    return ScriptOutcome(process.returncode, time.monotonic() - start, output)


def end_job(process: subprocess.Popen) -> str:
    """Kill a job started in its own session, and every process it started (torch elastic starts its workers in
    sessions of their own, so killing the job's session alone left the ranks holding its output open until
    their gloo timeout, 30 minutes), by PID; its output so far."""
    import psutil

    try:
        family = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for child in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        output = "(the job's output could not be read within 30 s of killing it)"
    return output


# --------------------------------------------------------------------------- lint


@dataclass
class LintOutcome:
    findings: list
    flagged_lines: set[int]

    @property
    def text(self) -> str:
        return "\n".join(map(str, self.findings))


def lint_item(item: Item) -> LintOutcome:
    from barrierlab.lint import lint_file

    findings = lint_file(item.path)
    named = {f.line for f in findings} | {f.condition_line for f in findings if f.condition_line is not None}
    return LintOutcome(findings, named & item.lines)
