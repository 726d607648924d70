"""Promise (bl.run): a function that runs under torch.multiprocessing.spawn runs under bl.run; bad arguments are
refused, good ones are not. Compile code routinely sets dynamo's or inductor's config in the training function
(`torch._dynamo.config.cache_size_limit = 64`, `torch._dynamo.config.suppress_errors = True`,
`torch._inductor.config.fx_graph_cache = False`). mp.spawn runs such a function. bl.run refuses it before starting:
"TypeError: barrierlab.run cannot send the function ... cannot pickle 'ConfigModuleInstance' object ... Create that
object inside the function instead" (torch._dynamo.config is a module whose class is a ModuleType subclass, which
cloudpickle tries to copy by value). Exit 0 if bl.run gives what mp.spawn gives."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

CALLER = r"""
import socket
import torch
import torch._dynamo
import torch._inductor.config
import torch.distributed as dist
import torch.multiprocessing as mp
import barrierlab as bl

def train():
    torch._dynamo.config.cache_size_limit = 64
    torch._inductor.config.fx_graph_cache = False
    t = torch.ones(1)
    dist.all_reduce(t)
    return f"limit {torch._dynamo.config.cache_size_limit} sum {t.item()}"

def spawned(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    print(f"RESULT mp.spawn rank {rank} {train()}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(spawned, args=(port,), nprocs=2)
    try:
        run = bl.run(train, world_size=2, deadline=60)
        for r in range(2):
            print(f"RESULT bl.run rank {r} {run.values[r] if run.ok else run[r].status}", flush=True)
    except Exception as e:
        print(f"RESULT bl.run refused: {type(e).__name__}: {str(e)[:230]}", flush=True)
"""

got = _h.bl_fn(CALLER)
spawn = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("mp.spawn"))
blrun = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("bl.run"))
_h.verdict(
    got["rc"] == 0 and len(spawn) == 2 and spawn == blrun,
    "a rank function that sets torch._dynamo / torch._inductor config",
    mp_spawn="\n".join(spawn),
    bl_run="\n".join(blrun),
    stderr_tail=got["err"][-600:] if got["rc"] != 0 else "",
)
