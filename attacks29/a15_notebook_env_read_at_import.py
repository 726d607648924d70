"""Promise (bl.run): the ranks get the kernel's environment "now, not the one the warm process started with", and
run as under torch.multiprocessing.spawn / torchrun. A notebook, after `import barrierlab` (which starts the warm
process and imports torch there) and a first bl.run, sets in a later cell the variables one sets to debug a distributed model:
OMP_NUM_THREADS=2, TORCH_COMPILE_DISABLE=1, TORCH_DISTRIBUTED_DEBUG=DETAIL. Ranks of mp.spawn (fresh
interpreters) read them as torch loads. bl.run's ranks see the variables in os.environ, but torch was loaded
before they were set (the warm process preloads torch._dynamo between runs): compile stays on and the thread count
stays 1 (TORCH_DISTRIBUTED_DEBUG alone is re-read; the thread count is bl.run's documented `threads`).
Exit 0 if bl.run's ranks report what mp.spawn's report."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

CALLER = r"""
import os, socket, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import barrierlab as bl

def first_cell():
    return dist.get_rank()

bl.run(first_cell, world_size=2, deadline=30)   # an earlier cell ran something
time.sleep(6)   # the learner reads the next cell

os.environ.update({"OMP_NUM_THREADS": "2", "TORCH_COMPILE_DISABLE": "1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"})

def state():
    import importlib   # not torch._dynamo.config directly: bl.run cannot send that (a16)
    config = importlib.import_module("torch._dynamo.config")
    return (f"threads={torch.get_num_threads()} compile_disabled={config.disable} "
            f"debug={dist.get_debug_level()}")

def spawned(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    print(f"RESULT mp.spawn rank {rank} {state()}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(spawned, args=(port,), nprocs=2)
    run = bl.run(state, world_size=2, deadline=60)
    for r in range(2):
        print(f"RESULT bl.run rank {r} {run.values[r] if run.ok else run[r].status}", flush=True)
"""

got = _h.bl_fn(CALLER)
spawn = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("mp.spawn"))
blrun = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("bl.run"))
_h.verdict(
    got["rc"] == 0 and len(spawn) == 2 and spawn == blrun,
    "variables set in the notebook after import barrierlab, read by torch as it loads",
    mp_spawn="\n".join(spawn),
    bl_run="\n".join(blrun),
    stderr_tail=got["err"][-600:] if got["rc"] != 0 else "",
)
