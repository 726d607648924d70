"""Every rank creates every machine's local group, then reduces inside its own.

Source: facebookresearch/detectron2, detectron2/utils/comm.py (``create_local_process_group``): the ranks are
split into machines of ``num_workers_per_machine``; ``new_group`` is called by *all* ranks for *every* machine
(it must be), and each rank keeps only the group of its own machine. Here 4 ranks form 2 "machines" of 2;
each machine sums a per-rank value in its local group, then the whole world sums the machines' results.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 5

_LOCAL_PROCESS_GROUP = None


def create_local_process_group(num_workers_per_machine: int) -> None:
    global _LOCAL_PROCESS_GROUP
    world_size = dist.get_world_size()
    num_machines = world_size // num_workers_per_machine
    machine_rank = dist.get_rank() // num_workers_per_machine
    for i in range(num_machines):
        ranks_on_i = list(range(i * num_workers_per_machine, (i + 1) * num_workers_per_machine))
        pg = dist.new_group(ranks_on_i)
        if i == machine_rank:
            _LOCAL_PROCESS_GROUP = pg


def get_local_rank() -> int:
    return dist.get_rank(group=_LOCAL_PROCESS_GROUP)


def worker():
    create_local_process_group(2)
    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value, group=_LOCAL_PROCESS_GROUP)
    if get_local_rank() == 0:
        machine_total = value.clone()
    else:
        machine_total = torch.zeros(1)
    dist.all_reduce(machine_total)
    assert machine_total.item() == 10.0, machine_total
    return machine_total.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
