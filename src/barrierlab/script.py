"""Run an ordinary training script on N local ranks, as ``torchrun --standalone --nproc-per-node N`` would.

``barrierlab run train.py -n 4 -- ARGS`` runs the script's ``__main__`` (``runpy.run_path`` with
``run_name="__main__"`` and ``sys.argv = [train.py, *ARGS]``) on every rank, with torchrun's environment
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR/MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE, GROUP_RANK,
GROUP_WORLD_SIZE, ROLE_RANK, ROLE_NAME, ROLE_WORLD_SIZE, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT/MAX_RESTARTS).
The script calls ``init_process_group`` itself (``env://``) and ``destroy_process_group``; its group joins
a TCPStore the launcher hosts on 127.0.0.1, as torchrun's workers join the agent's store, so nothing
listens beyond loopback. barrierlab adds what torchrun does not: a deadline that always ends the run,
recording, the diagnosis, the ledger and the timeline.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from barrierlab.launch import DEFAULT_WORLD_SIZE, run
from barrierlab.result import Run


def check_module(name, argv: Sequence[str] = ()) -> str:
    """The file of module ``name`` as ``python -m NAME`` finds it from the working folder (a package's
    ``__main__``), after checking it can be found and that ``argv`` is a sequence of str: the
    ``TypeError``/``ValueError`` :func:`run_module` raises, before anything is started.

    Nothing of the learner's is imported here (attack31 a01: ``importlib.util.find_spec("pkg.train")`` ran
    ``pkg/__init__.py`` in the launching process, where torchrun's agent never runs it: one that read LOCAL_RANK
    crashed the command, a slow one ran before the deadline counted). Each part of the name is looked up in its
    parent's folders by the import system's finders (:func:`_find_without_importing`), as the ranks' import will
    find it."""
    if not isinstance(name, str) or not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"module: not a module name (pkg.train): {name!r}")
    path = [os.getcwd(), *sys.path]  # python -m looks in the working folder first
    try:
        found = _find_without_importing(name, path)
        package = found is not None and found.submodule_search_locations is not None
        main = _find_without_importing(f"{name}.__main__", path) if package else 0
    except (ImportError, ValueError) as error:  # a parent that is not a package
        raise ValueError(f"module: {name!r} cannot be found from {os.getcwd()!r}: {error}") from None
    if main is None:  # attack20 a17: refused before the ranks start, as python -m refuses it
        raise ValueError(
            f"module: {name!r} is a package and cannot be directly executed (python -m needs its __main__.py)"
        )
    found = main or found
    if found is None:
        raise ValueError(f"module: no module named {name!r} from {os.getcwd()!r} (python -m looks there first)")
    _check_argv(argv, "module")
    return found.origin or name


def _find_without_importing(name: str, path: list[str]):
    """The spec of module ``name`` (dotted) as the import system would find it with ``sys.path`` = ``path``, or
    None, importing nothing: the top-level name is asked of every finder on ``sys.meta_path`` (built-in, frozen,
    an editable install's, the path finder, which is given ``path``), each further part of the finders with the
    folders of the part before it (a package's ``submodule_search_locations``), as the import system asks them
    once the parent is imported. A parent already imported here is taken as it is (its ``__path__``). What a
    package's ``__init__`` does to its own ``__path__`` is not seen (that would mean running it)."""
    from importlib.machinery import PathFinder

    parts = name.split(".")
    locations: list[str] | None = None
    spec = None
    for depth in range(len(parts)):
        full = ".".join(parts[: depth + 1])
        if depth:
            parent = ".".join(parts[:depth])
            if spec is None:
                return None
            loaded = sys.modules.get(parent)
            locations = getattr(loaded, "__path__", None) if loaded is not None else spec.submodule_search_locations
            if locations is None:
                raise ImportError(f"{parent!r} is not a package (no {parts[depth]!r} in it)")
            locations = list(locations)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            if finder is PathFinder or getattr(finder, "__name__", None) == "PathFinder":
                spec = PathFinder.find_spec(full, path if locations is None else locations)
            else:
                try:
                    spec = find(full, locations)
                except (ImportError, ValueError, AttributeError, TypeError):
                    spec = None
            if spec is not None:
                break
    return spec


def _check_argv(argv, what: str) -> None:
    if isinstance(argv, (str, bytes)) or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a sequence of str (the {what}'s command-line arguments)")


def run_module(
    name: str,
    world_size: int = DEFAULT_WORLD_SIZE,
    argv: Sequence[str] = (),
    *,
    timeout: float | None = None,
    deadline: float | None = None,
    record: bool = True,
    threads: int = 1,
    env: dict[str, str] | None = None,
) -> Run:
    """Run module ``name`` as ``python -m name`` (``torchrun -m``) would, on ``world_size`` ranks: what
    :func:`run_script` does for a file, for a module of a package (its relative imports work)."""
    from barrierlab import _rank

    check_module(name, argv)
    return _launch(_rank.run_module, (name, tuple(argv)), world_size, timeout, deadline, record, threads, env)


def _launch(entry, args: tuple, world_size, timeout, deadline, record, threads, env) -> Run:
    """``run(entry, ...)`` for a script or module: its own ``init_process_group``, and ``timeout``, when given,
    replacing the one it passes (checked by run() like any timeout)."""
    from barrierlab import _rank

    env = {**(env or {}), _rank.SCRIPT_RUN: "1"}
    if timeout is not None:
        env[_rank.TIMEOUT_OVERRIDES] = "1"
    ran = run(
        entry,
        world_size,
        args=args,
        timeout=timeout,
        deadline=deadline,
        record=record,
        threads=threads,
        env=env,
        init=False,
    )
    for rank in ran.ranks:  # its ranks ran __main__ to its end, not a function (review80d M3)
        rank.script = True
    return ran


def is_script(name: str) -> bool:
    """True when ``barrierlab run NAME`` names a script (a ``.py`` path or an existing file, a zip among them) or
    a folder with a ``__main__.py`` (``python appdir`` runs it, and torchrun too: attack15 a12), not a scenario."""
    return name.endswith(".py") or os.path.isfile(name) or os.path.isfile(os.path.join(name, "__main__.py"))


def run_script(
    path: str,
    world_size: int = DEFAULT_WORLD_SIZE,
    argv: Sequence[str] = (),
    *,
    timeout: float | None = None,
    deadline: float | None = None,
    record: bool = True,
    threads: int = 1,
    env: dict[str, str] | None = None,
) -> Run:
    """Run the script at ``path`` as ``__main__`` on ``world_size`` ranks and return the :class:`Run`.

    The return value of every rank is None; a rank ``finished`` when the script's ``__main__`` ran to its
    end or called ``sys.exit(0)``. ``timeout`` (seconds) is the timeout of the script's process group, also
    when the script passes its own ``timeout=`` to ``init_process_group`` (Lightning passes 30 minutes): who
    asks for 4 s gets 4 s, and rank 0's stderr says which timeout it replaced. ``None``: the script's own
    timeout, else :data:`~barrierlab.DEFAULT_TIMEOUT`. ``deadline`` ends the whole run.
    """
    from barrierlab import _rank

    typed = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    path = check_script(path, argv)
    args = (path, tuple(argv), typed if isinstance(typed, str) else None)
    return _launch(_rank.run_script, args, world_size, timeout, deadline, record, threads, env)


#: What in a script's source says it builds DDP, FSDP or DCP, or uses a library that does: the modules the warm
#: process preloads (torch._dynamo, torch.distributed.checkpoint, ...) are then worth waiting for once rather
#: than imported by every rank (DDP imports dynamo on construction: 2.4 s per rank on 2 cores).
HEAVY_MARKERS = (
    "DistributedDataParallel", "torch.nn.parallel", "DDP(", "fsdp", "FullyShardedDataParallel",
    "torch.distributed.checkpoint", "torch.compile", "lightning", "accelerate", "transformers", "torchmetrics",
    "deepspeed",
)  # fmt: skip


def needs_preloaded(path) -> bool:
    """Whether the script at ``path`` names DDP, FSDP, DCP, torch.compile or a library built on them: the script
    runner then waits for the warm process's preloading before the ranks fork. A script that builds DDP in a
    helper module of its own is not seen: its ranks import those modules themselves (slower, same result)."""
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return True
    return any(marker in text for marker in HEAVY_MARKERS)


def check_script(path, argv: Sequence[str] = ()) -> str:
    """The script's absolute path, after checking that it is a file and ``argv`` a sequence of str: the
    ``TypeError``/``ValueError`` :func:`run_script` raises, before anything is started."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be the path of a Python script (str), got {type(path).__name__}")
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path) and not os.path.isfile(os.path.join(path, "__main__.py")):
        what = "a folder without a __main__.py" if os.path.isdir(path) else "no such script"
        raise ValueError(f"path: {what} {path!r}")
    _check_argv(argv, "script")
    return path
