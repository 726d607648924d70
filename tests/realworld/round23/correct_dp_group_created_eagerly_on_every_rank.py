"""A parallel-state object that builds its data-parallel group on every rank at start-up; rank 0 prints a banner.

Models DeepSpeed ``deepspeed/utils/groups.py`` (``_get_data_parallel_group`` falls back to
``_clone_world_group()``, a ``dist.new_group(ranks=range(world_size))`` kept in a module global) and Megatron-LM
``megatron/core/parallel_state.py`` ``initialize_model_parallel`` (every group created once, on every rank,
in the same order, before anything reads it; the getters only return it). A learner's script wraps this in a
``ParallelState`` class with a ``dp_group`` property, prints a start-up banner on rank 0 (data-parallel size
read from the group), broadcasts rank 0's run configuration with ``broadcast_object_list`` and builds DDP on
the data-parallel group. ``new_group`` is a collective over the whole world; here it runs in ``__init__`` on
every rank, so reading the property under ``if rank == 0`` communicates nothing.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class ParallelState:
    def __init__(self):
        self._dp_group = dist.new_group(ranks=list(range(dist.get_world_size())))

    @property
    def dp_group(self):
        return self._dp_group

    @property
    def dp_world_size(self):
        return dist.get_world_size(group=self.dp_group)


def print_banner(state, config):
    print(f"run {config['run_name']}: data-parallel size {state.dp_world_size}, lr {config['lr']}")


def worker():
    rank = dist.get_rank()
    state = ParallelState()
    config = {"run_name": "sweep-3", "lr": 0.05} if rank == 0 else None
    if rank == 0:
        print_banner(state, config)
    holder = [config]
    dist.broadcast_object_list(holder, src=0)
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
