"""barrierlab: learn torch.distributed.barrier() by running it.

``barrierlab.run(fn, world_size=4)`` runs ``fn`` on every rank of a fresh local gloo group and returns a
``Run``: what each rank returned, raised or printed, where a stuck rank waited, and (with the recorder)
every collective it entered and left.
"""

from barrierlab._protocol import Status
from barrierlab.launch import DEFAULT_TIMEOUT, MAX_WORLD_SIZE, LaunchError, run, shutdown, warm_up
from barrierlab.record import span
from barrierlab.result import RankFailed, RankResult, Run
from barrierlab.source import show
from barrierlab.sync import main_process_first

__all__ = [
    "DEFAULT_TIMEOUT", "MAX_WORLD_SIZE", "LaunchError", "RankFailed", "RankResult", "Run", "Status",
    "main_process_first", "run", "show", "shutdown", "span", "warm_up",
]
__version__ = "0.1.0"


def _in_a_kernel() -> bool:
    import sys

    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and "ipykernel" in sys.modules


def _warm_up_in_kernels() -> None:
    """In a Jupyter kernel, start the warm process at import: torch loads while the learner reads."""
    import os

    if os.environ.get("BARRIERLAB_EAGER", "1") != "0" and _in_a_kernel():
        warm_up()


_warm_up_in_kernels()
