"""The rank functions the lessons run: one module per scenario, each also runnable under torchrun.

Every module here defines ``scenario(...)``, plain torch.distributed code that expects an initialised
default group, and ends with::

    if __name__ == "__main__":
        torchrun_main(scenario)

so that the very function a notebook runs with ``barrierlab.run(module.scenario, 4)`` also runs as

    torchrun --nproc-per-node 4 -m barrierlab.scenarios.<name> [key=value ...]

(``key=value`` pairs become keyword arguments of ``scenario``; values are Python literals).
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import sys
import tempfile
import time
import traceback
from datetime import timedelta

#: Process-group timeout under torchrun, unless BARRIERLAB_TIMEOUT (seconds) says otherwise: a deadlock
#: scenario then fails within seconds and exits non-zero instead of waiting torch's 30 minutes.
TORCHRUN_TIMEOUT = 10.0


def available() -> dict[str, str]:
    """Scenario module names and the first line of each one's docstring."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "scenario"):
            found[info.name] = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
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


def parse_kwargs(argv: list[str]) -> dict:
    """``["steps=3", "slow_rank=1"]`` -> ``{"steps": 3, "slow_rank": 1}`` (values as Python literals)."""
    kwargs = {}
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise SystemExit(f"arguments are key=value pairs, got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return kwargs


def torchrun_main(fn, argv: list[str] | None = None) -> None:
    """Run ``fn`` as one torchrun worker: env:// rendezvous, gloo, a bounded timeout, recording, exit code.

    Records to ``$BARRIERLAB_RECORD_DIR/rankN.events`` (default: a folder named after torchrun's run id
    in the temporary directory) and writes the rank's outcome next to it, so
    ``python -m barrierlab report DIR`` draws the same timeline and diagnosis as a notebook. Exits 0 if
    ``fn`` returned; if it raised, prints the traceback and, from the lowest failing rank, the diagnosis
    of the ranks on this machine, then exits 1.
    """
    import torch
    import torch.distributed as dist

    from barrierlab import record

    kwargs = parse_kwargs(sys.argv[1:] if argv is None else argv)
    timeout = float(os.environ.get("BARRIERLAB_TIMEOUT", TORCHRUN_TIMEOUT))
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if "BARRIERLAB_RECORD_DIR" not in os.environ:
        run_id = os.environ.get("TORCHELASTIC_RUN_ID", str(os.getppid()))
        os.environ["BARRIERLAB_RECORD_DIR"] = os.path.join(tempfile.gettempdir(), f"barrierlab-{run_id}")
    folder = os.environ["BARRIERLAB_RECORD_DIR"]
    record.start_from_env()
    outcome: dict = {"t_start": time.monotonic()}
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank = dist.get_rank()
    outcome.update(rank=rank, world_size=dist.get_world_size())
    code = 0
    try:
        outcome["value"] = repr(fn(**kwargs))
        outcome["status"] = "finished"
    except BaseException as error:  # report, then exit non-zero like any failed worker
        traceback.print_exc()
        outcome.update(status="raised", message=f"{type(error).__name__}: {error}",
                       traceback=traceback.format_exc())
        code = 1
    outcome["t_end"] = time.monotonic()
    record.stop()
    _write_outcome(folder, rank, outcome)
    if code:
        _explain(folder, rank, outcome["world_size"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: a poisoned gloo group can hang in its destructor


def _write_outcome(folder: str, rank: int, outcome: dict) -> None:
    import json

    path = os.path.join(folder, f"rank{rank}.outcome.json")
    with open(path + ".tmp", "w") as f:
        json.dump(outcome, f)
    os.replace(path + ".tmp", path)


def _explain(folder: str, rank: int, world_size: int, wait: float = 2.0) -> None:
    """Print the diagnosis once, from the lowest failing rank, after giving peers time to report."""
    import glob
    import json

    give_up = time.monotonic() + wait
    while time.monotonic() < give_up and len(glob.glob(os.path.join(folder, "rank*.outcome.json"))) < world_size:
        time.sleep(0.05)
    failing = []
    for path in glob.glob(os.path.join(folder, "rank*.outcome.json")):
        with open(path) as f:
            item = json.load(f)
        if item.get("status") != "finished":
            failing.append(item["rank"])
    if min(failing, default=rank) != rank:
        return
    from barrierlab.report import load

    run = load(folder)
    print(f"\n[barrierlab] rank {rank}: diagnosis of the ranks recorded in {folder}\n{run.diagnosis}\n\n"
          f"{run.ledger()}\n\nTimeline: python -m barrierlab report {folder} --timeline timeline.png",
          file=sys.stderr)
