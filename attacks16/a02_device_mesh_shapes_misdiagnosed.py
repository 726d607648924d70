"""a02: rank 0 builds a 2x2 DeviceMesh, ranks 1-3 a 1-D mesh of 4, then all call all_reduce on the "dp" group.
The 2-D mesh makes subgroups with new_group (a collective of the default group that ranks 1-3 never make), so
rank 0 waits in init_device_mesh and ranks 1-3 time out in the all_reduce: a mismatch (as the same run with an
explicit dist.new_group on rank 0 only is diagnosed: "Different collectives at the same position"). The diagnosis
instead calls rank 0 "still busy, not missing" and advises a longer deadline, which cannot help.
Promise 4: a real mismatch is reported as one, with the right ranks and lines.
Exits 0 if the promise holds, 1 if it breaks."""

import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

import barrierlab as bl


def mesh_shapes():
    if dist.get_rank() == 0:
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    else:
        mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("dp",))
    x = torch.ones(1)
    dist.all_reduce(x, group=mesh.get_group("dp"))
    return x.item()


def main() -> int:
    run = bl.run(mesh_shapes, 4, timeout=3, deadline=8, live=False)
    text = str(run.diagnosis)
    print(run)
    print(text)
    if run.ok:
        print("the run passed?")
        return 1
    wrong = [w for w in ("still busy, not missing", "give the run a longer `deadline`") if w in text]
    if wrong:
        print(f"BROKEN: the mismatch is diagnosed as a slow rank: {wrong}")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
