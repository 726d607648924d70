"""A parallel-state object that builds its data-parallel group lazily, on first read; rank 0 reads it first, in a banner.

Models DeepSpeed ``deepspeed/utils/groups.py`` (``_get_data_parallel_group`` falls back to
``_clone_world_group()``, which creates ``dist.new_group(ranks=range(world_size))`` the first time it is called
and keeps it in a module global) and, for the contrast, Megatron-LM ``parallel_state.initialize_model_parallel``
(every group created once, on every rank, before anything reads it). A learner's script wraps the lazy version
in a ``ParallelState`` class with a ``dp_group`` property, prints a start-up banner on rank 0 (the data-parallel
size read from the group), broadcasts rank 0's run configuration with ``broadcast_object_list`` and builds DDP
on the data-parallel group.

The bug: ``new_group`` is a collective over the whole world, and the property makes it on first read. Rank 0's
first read is in ``print_banner`` (``dp_world_size`` -> ``dp_group``), under ``if rank == 0``; rank 1's first
read would be in the DDP constructor's arguments, after the broadcast. Rank 0 waits in ``new_group`` for rank 1,
rank 1 waits in ``broadcast_object_list`` for rank 0. No line of the script pairs a collective with a rank
test: the collective hides behind two properties.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class ParallelState:
    def __init__(self):
        self._dp_group = None

    @property
    def dp_group(self):
        if self._dp_group is None:
            self._dp_group = dist.new_group(ranks=list(range(dist.get_world_size())))  # BUG # WAITS
        return self._dp_group

    @property
    def dp_world_size(self):
        return dist.get_world_size(group=self.dp_group)  # WAITS


def print_banner(state, config):
    print(f"run {config['run_name']}: data-parallel size {state.dp_world_size}, lr {config['lr']}")  # WAITS


def worker():
    rank = dist.get_rank()
    state = ParallelState()
    config = {"run_name": "sweep-3", "lr": 0.05} if rank == 0 else None
    if rank == 0:
        print_banner(state, config)  # WAITS
    holder = [config]
    dist.broadcast_object_list(holder, src=0)  # WAITS
    config = holder[0]
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 2), process_group=state.dp_group)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(rank)
    for step in range(10):
        x = torch.randn(8, 4, generator=g)
        loss = nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"[rank {rank}] {config['run_name']} final loss {loss.item():.4f}")


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
