"""From ``import barrierlab`` in a fresh Jupyter kernel to the first 4-rank result, and the first DDP demo once
the warm process has finished preloading.

    python benchmarks/first_result.py [--repeat 7]

Each repeat starts a new kernel (jupyter_client, the kernel spec of this Python), runs one cell that times
``import barrierlab`` + ``bl.run(f, 4)`` with ``time.perf_counter`` inside the kernel, then a cell that waits
until the warm process reports its preload done (``bl.warm_up(wait=True)``) and times a 4-rank DDP step.
Prints the medians (targets: first result <= 1.5 s, DDP demo <= 0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

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
print("RESULT", _end - _start, "PARTS", _imported - _start, _ready - _imported, _end - _ready)
"""

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
    client.execute(code)
    found = None
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        content = message["content"]
        if message["msg_type"] == "stream" and "RESULT" in content.get("text", ""):
            numbers = content["text"].split("RESULT", 1)[1].replace("PARTS", " ").split()
            found = float(numbers[0])
            if parts is not None:
                parts.append([float(x) for x in numbers[1:]])
        elif message["msg_type"] == "error":
            raise SystemExit("\n".join(content["traceback"]))
        elif message["msg_type"] == "status" and content["execution_state"] == "idle" and found is not None:
            return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    first, ddp, parts = [], [], []
    for _ in range(args.repeat):
        manager, client = start_new_kernel(kernel_name="python3", env={**os.environ, "BARRIERLAB_LIVE": "0"})
        try:
            first.append(_execute(client, FIRST, parts=parts))
            ddp.append(_execute(client, DDP))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    print("| what | median (s) | all (s) |")
    print("|---|---:|---|")
    print(f"| import barrierlab -> first 4-rank result | {statistics.median(first):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in first)} |")
    for name, values in zip(("  of which: import barrierlab and torch.distributed", "  then waiting for the warm process",
                             "  then the run"), zip(*parts)):
        print(f"| {name} | {statistics.median(values):.2f} | {', '.join(f'{x:.2f}' for x in values)} |")
    print(f"| 4-rank DDP step after the preload | {statistics.median(ddp):.2f} | {', '.join(f'{x:.2f}' for x in ddp)} |")
    print(json.dumps({"first": first, "ddp": ddp}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
