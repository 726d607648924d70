"""barrierlab: learn torch.distributed.barrier() by running it.

``barrierlab.run(fn, world_size=4)`` runs ``fn`` on every rank of a fresh local gloo group and returns a
``Run``: what each rank returned, raised or printed, where a stuck rank waited, and (with the recorder)
every collective it entered and left.
"""

from barrierlab.launch import DEFAULT_TIMEOUT, MAX_WORLD_SIZE, LaunchError, run, shutdown, warm_up
from barrierlab.record import span
from barrierlab.result import RankFailed, RankResult, Run
from barrierlab.source import show

__all__ = [
    "DEFAULT_TIMEOUT", "MAX_WORLD_SIZE", "LaunchError", "RankFailed", "RankResult", "Run",
    "run", "show", "shutdown", "span", "warm_up",
]
__version__ = "0.1.0"
