"""The round-2 items (this folder) run by the same judges as the first corpus (``../_harness.py``), with two
differences: this folder, not ``../_standins``, is on the path (items import their helper modules, e.g.
``import r2_vision_utils as utils``, and the *real* accelerate, Lightning and torchmetrics, never the
stand-ins), and an item may declare ``REQUIRES = ("accelerate", ...)``: the distributions it needs installed.

The item format is the first corpus's (see ``../_harness.py``); files without a ``correct_``/``buggy_``
prefix are helper modules, not items.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import _harness as harness  # noqa: E402

Item = harness.Item
#: Extra wall time for an item that imports an installed library (Lightning, torchmetrics, accelerate): each
#: rank imports it after the ranks start (the warm process preloads torch only); measured 35-65 s for
#: ``import lightning.pytorch, torchmetrics`` on the 2-core machine under a load average of 15-17.
IMPORT_ALLOWANCE = 90.0


def discover(folder: Path = HERE) -> list[Item]:
    return [harness.load(p) for p in sorted(Path(folder).glob("*.py")) if p.name.startswith(("correct_", "buggy_"))]


def requires(item: Item) -> tuple[str, ...]:
    """The distributions an item declares in ``REQUIRES`` (read with :mod:`ast`, nothing imported)."""
    for node in ast.parse(item.path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REQUIRES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def missing(item: Item) -> list[str]:
    """The required distributions that are not installed (a stand-in package on the path does not count)."""
    absent = []
    for name in requires(item):
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            absent.append(name)
    return absent


def lab_deadline(item: Item) -> float:
    """``bl.run``'s deadline for an item: its group timeout plus the first corpus's margin, plus
    :data:`IMPORT_ALLOWANCE` if it needs an installed library."""
    return item.timeout + harness.LAB_MARGIN + (IMPORT_ALLOWANCE if requires(item) else 0.0)


def script_deadline(item: Item) -> float:
    """The wall-clock bound of a torchrun job (the first corpus's), plus :data:`IMPORT_ALLOWANCE` for a library."""
    return harness.SCRIPT_DEADLINE + (IMPORT_ALLOWANCE if requires(item) else 0.0)


def use_path(folder: Path = HERE) -> None:
    """This folder first on ``sys.path`` and the stand-ins off it (ranks started by ``bl.run`` inherit it). A
    later round's folder gets the stand-ins last instead: an installed library wins, and an item that imports a
    stand-in of one that is not installed (round 38's Lightning Fabric pair) still runs."""
    while str(harness.STANDINS) in sys.path:
        sys.path.remove(str(harness.STANDINS))
    for name in [m for m, module in sys.modules.items() if _is_standin(module)]:
        del sys.modules[name]
    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    sys.path.insert(0, str(folder))
    if folder != HERE:
        sys.path.append(str(harness.STANDINS))


def _is_standin(module) -> bool:
    file = getattr(module, "__file__", None) or ""
    return file.startswith(str(harness.STANDINS) + os.sep)


def module(item: Item):
    use_path(item.path.parent)
    return importlib.import_module(item.name)


def run_in_lab(item: Item, record: bool = True) -> harness.LabOutcome:
    """``bl.run(worker, N)`` (a SELF_INIT item: ``bl.run(main, N, args=(N,), init=False)``), judged as the
    first corpus's items are."""
    import barrierlab as bl

    deadline = lab_deadline(item)
    fn = module(item)
    start = time.monotonic()
    if item.self_init:
        run = bl.run(fn.main, item.world_size, args=(item.world_size,), timeout=item.timeout, deadline=deadline,
                     record=record, init=False)
    else:
        run = bl.run(fn.worker, item.world_size, timeout=item.timeout, deadline=deadline, record=record)
    return harness._lab_outcome(item, run, time.monotonic() - start, deadline)


def run_with_script_runner(item: Item, record: bool = True) -> harness.LabOutcome:
    """``barrierlab run item.py -n N`` in process (``run_script``); a SELF_INIT item as :func:`run_in_lab`."""
    if item.self_init:
        return run_in_lab(item, record)
    from barrierlab.script import run_script

    use_path(item.path.parent)
    deadline = lab_deadline(item)
    start = time.monotonic()
    run = run_script(item.path, item.world_size, timeout=item.timeout, deadline=deadline, record=record)
    return harness._lab_outcome(item, run, time.monotonic() - start, deadline)


def run_as_script(item: Item, deadline: float | None = None) -> harness.ScriptOutcome:
    """``torchrun --standalone --nproc-per-node N item.py`` in a private network namespace (as the first
    corpus's), the item's folder as working directory and on ``PYTHONPATH``, its session killed at
    ``deadline`` (default :func:`script_deadline`)."""
    deadline = script_deadline(item) if deadline is None else deadline
    if item.self_init:
        command = [sys.executable, str(item.path)]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc-per-node={item.world_size}", str(item.path)]
    command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    python_path = os.pathsep.join(filter(None, [str(item.path.parent), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONPATH=python_path)
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=item.path.parent, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        return harness.ScriptOutcome(None, time.monotonic() - start, harness.end_job(process))
    return harness.ScriptOutcome(process.returncode, time.monotonic() - start, output)


lint_item = harness.lint_item
