"""Promise (bl.run): the rank function runs as it would under torch.multiprocessing.spawn / torchrun, with the same
results. A caller script (python caller.py; the reference says fn may come from a notebook cell or a module)
defines its Dataset class and a rank function that reads it with DataLoader(num_workers=2,
multiprocessing_context="spawn" or "forkserver": the contexts torch recommends when threads are around, and the
default on macOS). Under mp.spawn from the same script every rank sums the data (56.0). Under bl.run the rank's
__main__ is the warm process's, not the caller's, so the workers cannot pickle __main__.DS: every rank raises
"Can't pickle <class '__main__.DS'>". The fork context works in both. Exit 0 if bl.run gives what mp.spawn gives.
(In a real Jupyter kernel mp.spawn fails here too; this is the script caller the reference also names.)"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

CALLER = r"""
import socket
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
import barrierlab as bl

class DS(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.tensor([float(i)])

def body(ctx):
    dl = DataLoader(DS(), batch_size=4, num_workers=2, multiprocessing_context=ctx)
    t = torch.tensor([sum(b.sum().item() for b in dl)])
    dist.all_reduce(t)
    return t.item()

def spawned(rank, port, ctx):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    print(f"RESULT mp.spawn {ctx} rank {rank} {body(ctx)}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    for ctx in ("fork", "spawn", "forkserver"):
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        mp.spawn(spawned, args=(port, ctx), nprocs=2)
        run = bl.run(body, world_size=2, args=(ctx,), deadline=60)
        for r in range(2):
            what = run.values[r] if run[r].status == "finished" else f"{run[r].status}: {str(run[r].exception)[:90]}"
            print(f"RESULT bl.run {ctx} rank {r} {what}", flush=True)
"""

got = _h.bl_fn(CALLER)
spawn = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("mp.spawn"))
blrun = sorted(line.split(" ", 1)[1] for line in got["results"] if line.startswith("bl.run"))
_h.verdict(
    got["rc"] == 0 and len(spawn) == 6 and spawn == blrun,
    "DataLoader spawn/forkserver workers over the caller's Dataset class",
    mp_spawn="\n".join(spawn),
    bl_run="\n".join(blrun),
    stderr_tail=got["err"][-600:] if got["rc"] != 0 else "",
)
