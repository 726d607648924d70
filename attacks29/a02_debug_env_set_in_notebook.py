"""Promise: recording observes, it never changes what torch does; bl.run from a notebook gives the results torch
gives. A notebook sets os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL" in a cell (the kernel's environment, which
the reference says ranks get "now, not the one the warm process started with"), then runs a rank function whose
ranks call different collectives. With torch.multiprocessing.spawn (fresh interpreters, as torchrun's workers) the
variable takes effect: DETAIL, and every rank catches "Detected mismatch between collectives". Under bl.run the
debug level stays OFF (only env= is re-read) and the ranks time out instead. Exit 0 if both give the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

CALLER = r"""
import os, sys, datetime
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import barrierlab as bl

def first_cell():
    return dist.get_rank()

if __name__ == "__main__":
    bl.run(first_cell, world_size=2, deadline=30)    # an earlier cell ran the group once
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"     # a later cell: debug the mismatch

def body(rank):
    t = torch.ones(4)
    try:
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
        kind = "no error"
    except RuntimeError as e:
        kind = "mismatch detected" if "Detected mismatch" in str(e) else "other error"
    return f"level {dist.get_debug_level()} {kind}"

def spawned(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=6))
    print(f"RESULT spawn rank {rank} {body(rank)}", flush=True)

def in_bl():
    return body(dist.get_rank())

if __name__ == "__main__":
    import socket
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(spawned, args=(port,), nprocs=2)
    run = bl.run(in_bl, world_size=2, timeout=6, deadline=20)
    for r in range(2):
        print(f"RESULT bl.run rank {r} {run.values[r] if run.ok else run[r].status}", flush=True)
"""

got = _h.bl_fn(CALLER)
spawn = [line.replace("spawn ", "", 1) for line in got["results"] if line.startswith("spawn")]
blrun = [line.replace("bl.run ", "", 1) for line in got["results"] if line.startswith("bl.run")]
_h.verdict(
    got["rc"] == 0 and len(spawn) == 2 and spawn == blrun,
    "TORCH_DISTRIBUTED_DEBUG set in the notebook's environment before bl.run",
    rc=str(got["rc"]),
    mp_spawn="\n".join(spawn),
    bl_run="\n".join(blrun),
    stderr_tail=got["err"][-800:] if got["rc"] != 0 else "",
)
