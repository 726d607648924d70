"""Promise: a program that passes under torchrun passes under `barrierlab run` (the reference: a script that
replaces itself with `os.execv` of the same interpreter and script, "to set an environment variable before torch
loads, as some launch wrappers do", is judged as torchrun judges it). Such a wrapper re-executes itself with
`os.execv(sys.executable, sys.orig_argv)`: Python's own record of the command line, which keeps interpreter flags
(-u, -X ...) that sys.argv drops. Under torchrun a worker's sys.orig_argv is `python -u prog.py ARGS`: the script
runs again with the variable set and passes. In a `barrierlab run` rank, sys.orig_argv (and /proc/self/cmdline) is
barrierlab's own command line, `python -m barrierlab run prog.py -n 2 -- ARGS`: every rank starts a nested
barrierlab run, which refuses ("barrierlab.run was called inside a rank"), and the job fails with exit 1. Exit 0 if
both pass with the same lines."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import os
import sys

if os.environ.get("TRAIN_MALLOC_SET") != "1":       # re-exec once with the allocator settings in place
    os.environ["TRAIN_MALLOC_SET"] = "1"
    os.environ["MALLOC_ARENA_MAX"] = "2"
    os.execv(sys.executable, sys.orig_argv)         # same interpreter flags and arguments
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(f"RESULT rank {dist.get_rank()} sum {t.item()} argv {sys.argv[1:]}", flush=True)
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG, args=("--lr", "1"))
bl = _h.under("barrierlab", PROG, args=("--lr", "1"), bl_args=("--deadline", "60"))
said = [
    line.strip()[:200]
    for line in bl["out"].splitlines()
    if "replaced itself" in line or "RuntimeError: barrierlab" in line
][:2]
_h.verdict(
    tr["rc"] == bl["rc"] == 0 and tr["results"] == bl["results"],
    "a script that re-executes itself with sys.orig_argv",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"] + said),
)
