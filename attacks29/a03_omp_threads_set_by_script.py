"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same results. A training
script sizes its intra-op pool the usual way: `os.environ["OMP_NUM_THREADS"] = "2"` at its top, before `import
torch` (torchrun only sets 1 when the variable is unset, and says so). Under torchrun torch reads it as it loads:
torch.get_num_threads() is 2. Under `barrierlab run` torch was loaded in the warm process and the rank was given
set_num_threads(1): the script's setting is ignored. Exit 0 if both print the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import os
os.environ["OMP_NUM_THREADS"] = "2"     # before importing torch
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
print(f"RESULT rank {dist.get_rank()} OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} "
      f"torch.get_num_threads()={torch.get_num_threads()}", flush=True)
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG)
_h.verdict(
    tr["results"] == bl["results"] and tr["rc"] == bl["rc"] == 0,
    "OMP_NUM_THREADS set by the script before import torch",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]),
)
