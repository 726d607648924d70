"""Promise (bl.run): the rank function behaves as under torch.multiprocessing.spawn, with the same results. A
caller script (the reference: fn may come from a module or a notebook) configures the process at its top, as
scripts and first notebook cells do: logging.basicConfig(level=INFO), warnings as errors while debugging,
torch.set_default_dtype(torch.float64), torch.manual_seed(1234). mp.spawn's children re-import the caller's main
module, so every rank has those settings: its logger.info lines print, warnings raise, tensors are float64 and
both ranks draw the same seeded numbers. bl.run sends only the function: in its ranks the log line vanishes, the
warning is only printed, tensors are float32 and the draws differ per rank and per run. Exit 0 if bl.run's ranks
report what mp.spawn's report."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

CALLER = r"""
import logging, socket, warnings
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import barrierlab as bl

logging.basicConfig(level=logging.INFO, format="%(message)s")
logger = logging.getLogger("train")
warnings.filterwarnings("error", category=UserWarning)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1234)

def train():
    rank = dist.get_rank()
    logger.info("RESULT-LOG rank %d logged", rank)
    try:
        warnings.warn("lr schedule ended early")
        w = "warning only printed"
    except UserWarning:
        w = "warning raised"
    x = torch.rand(2)
    return f"{w} dtype={x.dtype} first draw={x[0].item():.6f}"

def spawned(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    print(f"RESULT mp.spawn rank {rank} {train()}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(spawned, args=(port,), nprocs=2)
    run = bl.run(train, world_size=2, deadline=60)
    for r in range(2):
        logged = "logged" if "RESULT-LOG" in run[r].stderr + run[r].stdout else "no log line"
        print(f"RESULT bl.run rank {r} {run.values[r] if run.ok else run[r].status} [{logged}]", flush=True)
"""

got = _h.bl_fn(CALLER)
logged = got["out"] + got["err"]
spawn = sorted(
    line.split(" ", 1)[1] + (" [logged]" if f"RESULT-LOG rank {line.split()[2]} logged" in logged else " [no log line]")
    for line in got["results"]
    if line.startswith("mp.spawn")
)
blrun = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("bl.run"))
_h.verdict(
    got["rc"] == 0 and len(spawn) == 2 and spawn == blrun,
    "the caller's process settings (logging, warnings filter, default dtype, seed)",
    mp_spawn="\n".join(spawn),
    bl_run="\n".join(blrun),
    stderr_tail=got["err"][-600:] if got["rc"] != 0 else "",
)
