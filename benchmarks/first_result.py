"""From ``import barrierlab`` in a fresh Jupyter kernel to the first 4-rank result, and the first DDP demo once
the warm process has finished preloading.

    python benchmarks/first_result.py [--repeat 7] [--without-kernel-hook] [--idle SECONDS]

Each repeat starts a new kernel (jupyter_client, the kernel spec of this Python) for each import order, runs
one cell that times the imports + ``bl.run(f, 4)`` with ``time.perf_counter`` inside the kernel, split into
the imports, the wait for the warm process and the run:

* ``import barrierlab`` first, then ``torch.distributed`` (the issue's measure); in this kernel a second cell
  waits until the warm process reports its preload done (``bl.warm_up(wait=True)``) and times a 4-rank DDP step;
* ``torch`` first, then barrierlab: the order of the notebooks' first cells (isort's).

Before the next kernel starts, it waits until the last one's warm process has exited (a warm process that is
importing notices its kernel's end only after that import). The kernels load the lab's kernel config, so the
warm process starts with the kernel (``src/barrierlab_kernel.py``); ``--without-kernel-hook`` starts kernels
without that extension, as before it existed. ``--idle 3`` waits 3 s after the kernel is ready before the
first cell, as a learner reads the notebook's introduction before running it. Prints medians (targets: first result <= 1.5 s, DDP <= 0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import psutil
from jupyter_client.manager import start_new_kernel

FIRST = """
import time as _t
_start = _t.perf_counter()
import barrierlab as bl
import torch.distributed as dist
_imported = _t.perf_counter()
from barrierlab import launch as _launch
bl.warm_up()
_launch._warm.wait_ready()  # what bl.run waits for first: timed apart, it adds nothing to the total
_ready = _t.perf_counter()
def _first():
    dist.barrier()
    return dist.get_rank()
_run = bl.run(_first, 4)
assert _run.ok, _run
_end = _t.perf_counter()
print("RESULT", _end - _start, "PARTS", _imported - _start, _ready - _imported, _end - _ready, "WARM", _launch._warm.process.pid)
"""

#: The same, with torch imported before barrierlab, as the notebooks' first cells do.
TORCH_FIRST = FIRST.replace(
    "import barrierlab as bl\nimport torch.distributed as dist\n",
    "import torch.distributed as dist\nimport barrierlab as bl\n",
)
assert TORCH_FIRST != FIRST

DDP = """
import time as _t
bl.warm_up(wait=True)
def _ddp_step():
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(torch.nn.Linear(8, 8))
    model(torch.ones(2, 8)).sum().backward()
    return dist.get_rank()
_start = _t.perf_counter()
_run = bl.run(_ddp_step, 4)
assert _run.ok, _run
print("RESULT", _t.perf_counter() - _start)
"""


def _execute(client, code: str, timeout: float = 120, parts: list | None = None) -> float:
    """Run ``code``; parse its ``RESULT total [PARTS a b c] [WARM pid]`` line once the cell is done (the
    kernel may send a printed line in several stream messages)."""
    message_id = client.execute(code)
    stdout = ""
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        if message["parent_header"].get("msg_id") != message_id:
            continue
        content = message["content"]
        if message["msg_type"] == "stream" and content.get("name") == "stdout":
            stdout += content["text"]
        elif message["msg_type"] == "error":
            raise SystemExit("\n".join(content["traceback"]))
        elif message["msg_type"] == "status" and content["execution_state"] == "idle":
            break
    line = next(line for line in stdout.splitlines() if line.startswith("RESULT"))
    text, _, warm = line[len("RESULT") :].partition("WARM")
    numbers = [float(x) for x in text.replace("PARTS", " ").split()]
    if parts is not None:
        parts.append(numbers[1:])
    if warm.strip():
        _WARM_PIDS.append(int(warm.split()[0]))
    return numbers[0]


_WARM_PIDS: list[int] = []


def _wait_until_gone(pids: list[int], seconds: float = 30.0) -> None:
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up and any(psutil.pid_exists(pid) for pid in pids):
        time.sleep(0.1)


def _row(name: str, values: list[float]) -> None:
    print(f"| {name} | {statistics.median(values):.2f} | {', '.join(f'{x:.2f}' for x in values)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--without-kernel-hook",
        action="store_true",
        help="start kernels without the extension that starts the warm process with the kernel",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="seconds between the kernel being ready and the first cell (a learner reading)",
    )
    args = parser.parse_args()
    extra = ["--InteractiveShellApp.extensions=[]"] if args.without_kernel_hook else []
    results = {"barrierlab first": ([], []), "torch first": ([], [])}
    ddp = []
    for _ in range(args.repeat):
        for order, code in (("barrierlab first", FIRST), ("torch first", TORCH_FIRST)):
            manager, client = start_new_kernel(
                kernel_name="python3", extra_arguments=extra, env={**os.environ, "BARRIERLAB_LIVE": "0"}
            )
            try:
                time.sleep(args.idle)
                totals, parts = results[order]
                totals.append(_execute(client, code, parts=parts))
                if order == "barrierlab first":
                    ddp.append(_execute(client, DDP))
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=True)
                _wait_until_gone(_WARM_PIDS)
    print(
        f"kernel hook: {'off' if args.without_kernel_hook else 'on'}; first cell {args.idle:g} s after the kernel "
        f"was ready; load average {os.getloadavg()[0]:.1f}"
    )
    print("| what | median (s) | all (s) |")
    print("|---|---:|---|")
    for order, (totals, parts) in results.items():
        _row(f"{order}: imports -> first 4-rank result", totals)
        for name, values in zip(
            ("  of which the imports", "  then waiting for the warm process", "  then the run"), zip(*parts)
        ):
            _row(name, values)
    _row("4-rank DDP step after the preload", ddp)
    print(json.dumps({order: totals for order, (totals, _) in results.items()} | {"ddp": ddp}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
