"""The rank functions the lessons run: one module per scenario, each also runnable under torchrun.

Every module here defines ``scenario(...)``, plain torch.distributed code that expects an initialised
default group, and ends with::

    if __name__ == "__main__":
        torchrun_main(scenario)

so that the very function a notebook runs with ``barrierlab.run(module.scenario, 4)`` also runs as

    torchrun --nproc-per-node 4 -m barrierlab.scenarios.<name> [key=value ...]

(``key=value`` pairs become keyword arguments of ``scenario``; values are Python literals). This module
is only the registry of scenarios; the torchrun worker entry (``torchrun_main``) is
:func:`barrierlab.torchrun.main`, re-exported here for the scenario modules.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from barrierlab.torchrun import main as torchrun_main
from barrierlab.torchrun import parse_kwargs

__all__ = ["available", "load", "parse_kwargs", "shared_folder", "torchrun_main"]


def available() -> dict[str, str]:
    """Scenario module names and the first line of each one's docstring, read from the source (``barrierlab
    list`` imports neither the scenarios nor torch): a scenario is a module defining ``scenario`` at top level."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        tree = ast.parse(Path(__path__[0], f"{info.name}.py").read_text(encoding="utf-8"))
        if any(isinstance(node, ast.FunctionDef) and node.name == "scenario" for node in tree.body):
            doc = ast.get_docstring(tree) or ""
            found[info.name] = doc.strip().splitlines()[0] if doc.strip() else ""
    return found


def load(name: str):
    """The ``scenario`` function of ``barrierlab.scenarios.<name>``."""
    if name not in available():
        raise ValueError(f"no scenario {name!r}; available: {', '.join(sorted(available()))}")
    return importlib.import_module(f"{__name__}.{name}").scenario


def shared_folder(folder: str | None = None, prefix: str = "barrierlab-") -> str:
    """``folder`` if one is given, else a fresh temporary folder that every rank agrees on: rank 0 makes it
    and broadcasts its path. That is what a scenario needs under torchrun on one machine; the notebooks
    pass a folder of their own."""
    if folder:
        return folder
    import tempfile

    import torch.distributed as dist

    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]
