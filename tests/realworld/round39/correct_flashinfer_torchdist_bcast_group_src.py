"""FlashInfer ``TorchDistBackend.bcast``, fixed: the group-local ``root`` goes to ``broadcast_object_list`` as ``group_src``.

Source: flashinfer-ai/flashinfer PR #3418 ("[bugfix] TorchDistBackend.bcast uses global rank instead of local
rank"), a regression from PR #2955; modelled on ``flashinfer/comm/mnnvl.py`` ``TorchDistBackend`` and the
workspace creation behind ``create_allreduce_fusion_workspace``.

vLLM creates FlashInfer's all-reduce fusion workspace for each tensor-parallel group: the group's first member
allocates the shared handle and ``bcast(handle, root=0)`` hands it to the other members. ``root`` is a rank inside
the communicator; the PR's fix passes it as ``group_src``, so with TP 2 on four ranks both groups, ``{0, 1}`` and
``{2, 3}``, broadcast from their own first member and every rank reaches the start-up barrier.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

TP = 2


class TorchDistBackend:
    def __init__(self, group):
        self._group = group

    def Get_rank(self):
        return dist.get_rank(self._group)

    def Get_size(self):
        return dist.get_world_size(self._group)

    def bcast(self, data, root=0):
        objects = [data]
        dist.broadcast_object_list(objects, group_src=root, group=self._group)  # root is group-local
        return objects[0]


def create_allreduce_fusion_workspace(comm, max_tokens, hidden):
    handle = None
    if comm.Get_rank() == 0:
        # stand-in for the IPC handle of the shared buffer the first member allocates
        handle = {"owner": dist.get_rank(), "bytes": max_tokens * hidden * 4 * comm.Get_size()}
    handle = comm.bcast(handle, root=0)
    return {"handle": handle, "buffer": torch.zeros(max_tokens, hidden)}


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    tp_group = None
    for start in range(0, world, TP):
        g = dist.new_group(list(range(start, start + TP)))
        if rank in range(start, start + TP):
            tp_group = g
    workspace = create_allreduce_fusion_workspace(TorchDistBackend(tp_group), max_tokens=8, hidden=4)
    dist.barrier()
    x = torch.full((2, 4), float(rank))
    dist.all_reduce(x, group=tp_group)
    print(f"rank {rank}: workspace from rank {workspace['handle']['owner']}, tp sum {x[0, 0].item():.1f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
