"""Re-execute notebooks in place so their stored outputs are current, with minimal, stable metadata.

    python scripts/run_notebooks.py                 # every notebook under notebooks/ and tests/notebooks/
    python scripts/run_notebooks.py notebooks/00_*.ipynb

Prints each notebook's wall time and the peak memory (PSS) of the kernel with its ranks.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def normalise(nb: nbformat.NotebookNode) -> None:
    """Keep only metadata that does not change from machine to machine or run to run."""
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("widgets", None)
        for output in cell.get("outputs", []):
            output.get("metadata", {}).pop("execution", None)


def _tree_pss(pid: int) -> int:
    total = 0
    try:
        root = psutil.Process(pid)
        for proc in [root] + root.children(recursive=True):
            try:
                total += proc.memory_full_info().pss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    except psutil.NoSuchProcess:
        pass
    return total


def execute(path: Path) -> tuple[float, int]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            manager = client.km
            pid = getattr(getattr(getattr(manager, "provisioner", None), "process", None), "pid", None)
            if pid:
                peak[0] = max(peak[0], _tree_pss(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        client.execute()
    finally:
        done.set()
        sampler.join()
    elapsed = time.monotonic() - started
    normalise(nb)
    nbformat.write(nb, path)
    return elapsed, peak[0]


def absolute_pythonpath(value: str, cwd: Path) -> str:
    """PYTHONPATH with every relative entry made absolute from ``cwd``: a kernel starts in its notebook's folder,
    where ``PYTHONPATH=src`` names nothing, and the notebooks then silently import the installed barrierlab (a
    worktree's helper regenerated a notebook from main's code that way in session 34)."""
    return os.pathsep.join(str((cwd / entry).resolve()) if entry else entry for entry in value.split(os.pathsep))


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONPATH"):
        os.environ["PYTHONPATH"] = absolute_pythonpath(os.environ["PYTHONPATH"], Path.cwd())
    paths = [Path(p) for p in argv] or sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(
        ROOT.glob("tests/notebooks/*.ipynb")
    )
    print(f"{'notebook':<48} {'seconds':>8} {'peak MiB':>9}")
    for path in paths:
        elapsed, peak = execute(path)
        print(f"{str(path.relative_to(ROOT) if path.is_absolute() else path):<48} {elapsed:8.1f} {peak / 2**20:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
