"""Promise: recording observes, it never changes what torch does; a program that passes under torchrun passes under
`barrierlab run` with the same results. A debugging script sets TORCH_DISTRIBUTED_DEBUG=DETAIL at its top, before
`import torch` (as PyTorch's debugging docs and many forum answers say to), then two ranks call different
collectives. Under torchrun torch reads the variable at import, wraps the group in ProcessGroupWrapper and both ranks
catch "Detected mismatch between collectives on ranks" at once. Under `barrierlab run` torch was imported long before
in the warm process, the variable is never read, the level stays OFF and the ranks instead time out after 8 s.
Exit 0 if both print the same RESULT lines."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import os
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # before importing torch
import datetime
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
rank = dist.get_rank()
print(f"RESULT rank {rank} debug level {dist.get_debug_level()}", flush=True)
t = torch.ones(4)
try:
    if rank == 0:
        dist.all_reduce(t)
    else:
        dist.broadcast(t, src=0)
    print(f"RESULT rank {rank} no error", flush=True)
except RuntimeError as e:
    first = str(e).splitlines()[0]
    kind = "mismatch detected" if "Detected mismatch" in first else "other error: " + first[-60:]
    print(f"RESULT rank {rank} {kind}", flush=True)
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "40"))
_h.verdict(
    tr["results"] == bl["results"] and tr["rc"] == bl["rc"],
    "TORCH_DISTRIBUTED_DEBUG set by the script before import torch",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]),
)
