"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same results. One script
using many torch.distributed features the way training code does: a subprocess reading torchrun's variables,
multiprocessing pools (fork and spawn) of a function of the script, two threads all-reducing on two groups,
init_device_mesh, new_subgroups, all_gather_object / scatter_object_list, DCP save + load into a fresh model, FSDP2
(fully_shard) forward/backward on CPU. Exit 0 if both print the same RESULT lines and exit 0."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import os, sys, json, threading, subprocess, multiprocessing as mp
import torch, torch.nn as nn, torch.distributed as dist
def sq(x): return x * x
def main():
    dist.init_process_group("gloo")
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = {}
    # subprocess reading env
    out["sub"] = subprocess.run([sys.executable, "-c", "import os;print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ.get('TORCHELASTIC_RUN_ID') is not None)"], capture_output=True, text=True).stdout.strip()
    with mp.get_context("fork").Pool(2) as p: out["pool_fork"] = p.map(sq, range(4))
    with mp.get_context("spawn").Pool(2) as p: out["pool_spawn"] = p.map(sq, range(4))
    # threads doing collectives on separate groups
    g1 = dist.new_group(list(range(ws))); g2 = dist.new_group(list(range(ws)))
    res = {}
    def w(name, g):
        t = torch.ones(1) * (rank + 1)
        dist.all_reduce(t, group=g); res[name] = t.item()
    ths = [threading.Thread(target=w, args=("a", g1)), threading.Thread(target=w, args=("b", g2))]
    [t.start() for t in ths]; [t.join() for t in ths]
    out["threads"] = res
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (ws,))
    out["mesh"] = str(mesh)
    sub, _ = dist.new_subgroups(group_size=1)
    out["subgroups"] = dist.get_world_size(sub)
    ol = [None] * ws; dist.all_gather_object(ol, {"r": rank}); out["objs"] = ol
    sc = [None]; dist.scatter_object_list(sc, [f"s{i}" for i in range(ws)] if rank == 0 else None, src=0); out["scatter"] = sc
    # DCP
    import torch.distributed.checkpoint as dcp
    torch.manual_seed(0)
    m = nn.Linear(3, 3)
    dcp.save({"m": m.state_dict()}, checkpoint_id="ckpt")
    m2 = nn.Linear(3, 3); sd = {"m": m2.state_dict()}
    dcp.load(sd, checkpoint_id="ckpt"); m2.load_state_dict(sd["m"])
    out["dcp"] = torch.equal(m.weight, m2.weight)
    # FSDP2 on CPU
    try:
        from torch.distributed.fsdp import fully_shard
        torch.manual_seed(0)
        fm = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
        fully_shard(fm)
        l = fm(torch.ones(2, 4)).sum(); l.backward()
        out["fsdp"] = round(l.item(), 5)
    except Exception as e:
        out["fsdp"] = type(e).__name__ + str(e)[:80]
    print(f"RESULT {rank} {json.dumps(out, sort_keys=True)}", flush=True)
    dist.destroy_process_group()
if __name__ == "__main__":
    main()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "100"))
_h.verdict(
    len(tr["results"]) == 2 and tr["results"] == bl["results"] and tr["rc"] == bl["rc"] == 0,
    "many torch.distributed features in one script",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]) + ("" if tr["results"] else tr["err"][-1500:]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]) + ("" if bl["results"] else bl["out"][-1500:]),
)
