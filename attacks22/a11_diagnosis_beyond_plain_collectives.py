"""attack22 a11: is each headline true to what happened, for torch features beyond plain collectives?

Promise (README, docs/reference.md): the diagnosis names what went wrong. Cases: all_to_all_single with split
sizes the peer does not expect; monitored_barrier(wait_all_ranks=True) with two ranks absent, and with one rank
2.5 s late (not absent); broadcast_object_list of an unpicklable object; new_subgroups with one member skipping
its subgroup's barrier; DeviceMesh (2x2, CPU) with one member skipping a mesh-dim all_reduce; DDP no_sync on rank
0 only; broadcast_object_list lists of different lengths; all_to_all with a wrong list length. Each headline must
contain the words that say what happened (and not the wrong ones). Exit 0 if all do.
"""

import datetime
import sys
import threading
import time

import torch
import torch.distributed as dist
from _h import verdict

import barrierlab as bl


def a2a_splits():
    out, inp = torch.zeros(2), torch.ones(2)
    if dist.get_rank() == 0:
        dist.all_to_all_single(out, inp, output_split_sizes=[1, 1], input_split_sizes=[1, 1])
    else:
        dist.all_to_all_single(out, inp, output_split_sizes=[2, 0], input_split_sizes=[0, 2])


def monitored_absent():
    if dist.get_rank() >= 2:
        return
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=2), wait_all_ranks=True)


def monitored_late():
    if dist.get_rank() == 3:
        time.sleep(2.5)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=2), wait_all_ranks=True)


def unpicklable():
    objs = [threading.Lock()] if dist.get_rank() == 0 else [None]
    dist.broadcast_object_list(objs, src=0)


def subgroup_skip():
    sub, _ = dist.new_subgroups(group_size=2)
    if dist.get_rank() != 3:
        dist.barrier(group=sub)


def mesh_skip():
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    if dist.get_rank() != 1:
        dist.all_reduce(torch.ones(1), group=mesh.get_group("tp"))


def no_sync_one_rank():
    from torch.nn.parallel import DistributedDataParallel as DDP

    m = DDP(torch.nn.Linear(4, 1))
    if dist.get_rank() == 0:
        with m.no_sync():
            m(torch.ones(2, 4)).sum().backward()
    else:
        m(torch.ones(2, 4)).sum().backward()
    dist.barrier()


def object_list_lengths():
    objs = [1, 2, 3] if dist.get_rank() == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)


def a2a_count():
    n = 2 if dist.get_rank() == 0 else 3
    dist.all_to_all([torch.zeros(1) for _ in range(n)], [torch.ones(1) for _ in range(n)])


CASES = [
    (a2a_splits, 2, ["all-to-all", "sizes"], []),
    (monitored_absent, 4, ["ranks 2 and 3 never"], []),
    (monitored_late, 4, ["rank 3", "after", "gave up before rank 3 arrived"], ["never"]),
    (unpicklable, 2, ["rank 0 failed by itself", "pickle"], []),
    (subgroup_skip, 4, ["rank 3", "never"], ["rank 0", "rank 1 "]),
    (mesh_skip, 4, ["rank 1", "never", "[0, 1]"], []),
    (no_sync_one_rank, 2, ["barrier", "all_reduce", "DDP"], []),
    (object_list_lengths, 2, ["different lengths", "3 objects", "2 objects"], []),
    (a2a_count, 2, ["rank 1 failed by itself", "list size 3"], []),
]


def main():
    wrong = []
    for fn, n, must, must_not in CASES:
        run = bl.run(fn, n, timeout=3, deadline=10)
        h = run.diagnosis.headline
        bad = [w for w in must if w not in h] + [f"not:{w}" for w in must_not if w in h]
        print(f"{'BAD' if bad else 'ok '} {fn.__name__} {run.statuses}\n    {h}")
        if bad:
            wrong.append(f"{fn.__name__} {bad}")
    verdict(bool(wrong), f"{len(wrong)} headline(s) not true to what happened: {wrong}")


if __name__ == "__main__":
    sys.exit(main())
