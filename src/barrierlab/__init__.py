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

#: Public names and the module each comes from, imported when first used (PEP 562): ``barrierlab lint``,
#: ``list``, ``report`` and ``--help`` never import torch, and ``import barrierlab`` in a kernel costs
#: nothing but the warm process's early start.
_EXPORTS = {
    "Status": "barrierlab._protocol",
    "DEFAULT_TIMEOUT": "barrierlab.launch",
    "MAX_WORLD_SIZE": "barrierlab.launch",
    "LaunchError": "barrierlab.launch",
    "run": "barrierlab.launch",
    "shutdown": "barrierlab.launch",
    "warm_up": "barrierlab.launch",
    "span": "barrierlab.record",
    "RankFailed": "barrierlab.result",
    "RankResult": "barrierlab.result",
    "Run": "barrierlab.result",
    "show": "barrierlab.source",
    "main_process_first": "barrierlab.sync",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'barrierlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
        from barrierlab.launch import warm_up

        warm_up()


_adopt_early_warm_process()
