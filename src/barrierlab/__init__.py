"""barrierlab: learn torch.distributed.barrier() by running it.

``barrierlab.run(fn, world_size=4)`` runs ``fn`` on every rank of a fresh local gloo group and returns a
``Run``: what each rank returned, raised or printed, where a stuck rank waited, and (with the recorder)
every collective it entered and left.
"""


def _in_a_kernel() -> bool:
    import sys

    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and "ipykernel" in sys.modules


def _start_warm_process_early() -> None:
    """In a Jupyter kernel, start the warm process before anything else here imports torch: the warm process
    imports torch while this kernel does, and the first run finds it ready (``BARRIERLAB_EAGER=0``: don't)."""
    import os

    if os.environ.get("BARRIERLAB_EAGER", "1") != "0" and _in_a_kernel():
        from barrierlab import _warmstart

        _warmstart.start_early()


_start_warm_process_early()

from barrierlab._protocol import Status  # noqa: E402  (after the early start, on purpose)
from barrierlab.launch import DEFAULT_TIMEOUT, MAX_WORLD_SIZE, LaunchError, run, shutdown, warm_up  # noqa: E402
from barrierlab.record import span  # noqa: E402
from barrierlab.result import RankFailed, RankResult, Run  # noqa: E402
from barrierlab.source import show  # noqa: E402
from barrierlab.sync import main_process_first  # noqa: E402

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_WORLD_SIZE",
    "LaunchError",
    "RankFailed",
    "RankResult",
    "Run",
    "Status",
    "main_process_first",
    "run",
    "show",
    "shutdown",
    "span",
    "warm_up",
]
__version__ = "0.1.0"


def _adopt_early_warm_process() -> None:
    """Hand the early warm process to the launcher, which owns it from now on (and stops it at exit)."""
    from barrierlab import _warmstart

    if _warmstart.early is not None:
        warm_up()


_adopt_early_warm_process()
