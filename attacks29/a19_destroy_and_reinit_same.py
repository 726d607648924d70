"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same results.
init_process_group (env://), destroy_process_group, init again with tcp:// on MASTER_ADDR:MASTER_PORT (torchrun's
agent store) and a new_group, destroy, init a third time with file://, barrier, destroy: the all_reduce results and
is_initialized() after each destroy. Exit 0 if they are the same. NOTE: re-initialising in one process is flaky in
torch itself: in 7 runs each of a two-init variant, torchrun failed once (gloo "Connection refused" to the first
group's old address) and barrierlab run once (stuck joining until the deadline), so a single BROKEN here is the
program's nondeterminism, not evidence against barrierlab; this attack tries twice under each launcher and
compares the first successful results."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = r"""
import os, sys, json, tempfile
import torch, torch.distributed as dist
res = []
rank = int(os.environ["RANK"]); ws = int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=8))
t = torch.tensor([rank + 1.0]); dist.all_reduce(t); res.append(t.item())
dist.destroy_process_group()
res.append(dist.is_initialized())
# re-init with a tcp:// method on a port picked from MASTER_PORT + 1
port = int(os.environ["MASTER_PORT"])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ws)
t = torch.tensor([rank + 10.0]); dist.all_reduce(t); res.append(t.item())
g = dist.new_group([0, 1]); t = torch.ones(1); dist.all_reduce(t, group=g); res.append(t.item())
dist.destroy_process_group()
res.append(dist.is_initialized())
fname = os.path.abspath("reinit_store_file")
dist.init_process_group("gloo", init_method=f"file://{fname}", rank=rank, world_size=ws)
t = torch.tensor([rank + 100.0]); dist.all_reduce(t); res.append(t.item())
res.append(dist.get_world_size())
dist.barrier()
dist.destroy_process_group()
res.append(dist.is_initialized())

print(f"RESULT {rank} {res}", flush=True)
"""


def twice(launcher, **kw):
    got = _h.under(launcher, PROG, timeout=28, **kw)
    if got["rc"] != 0:
        got = _h.under(launcher, PROG, timeout=28, **kw)
    return got


tr = twice("torchrun")
bl = twice("barrierlab", bl_args=("--deadline", "25"))
_h.verdict(
    len(tr["results"]) == 2 and tr["results"] == bl["results"] and tr["rc"] == bl["rc"] == 0,
    "same RESULT lines and exit status",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]) + ("" if tr["results"] else tr["err"][-1500:]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]) + ("" if bl["results"] else bl["out"][-1500:]),
)
