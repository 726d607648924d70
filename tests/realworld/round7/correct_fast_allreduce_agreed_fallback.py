"""An optional fast all-reduce whose availability is agreed on by all ranks before its collective setup.

The fix the reviews of local-inference-lab/b12x PR #147 (narrow the blanket ``except`` around
``PCIeIslandRSAllReduce``, whose constructor makes a collective) and NVIDIA/TensorRT-LLM PR #7507 ("every
rank must call Allgather exactly once") ask for, in the form of tier4/Diffusion-Planner PR #336 ("Catch, still
reach the barrier, all-reduce the failure flag"): each rank checks the constructor's rank-local precondition
(free shared memory on its node; ``_shm_free_bytes`` stands in for ``/dev/shm``, the second node is short),
the flags are all-reduced with MIN, and either every rank builds the fast path or every rank uses the fallback
(reduce to rank 0, then broadcast).

Looks suspicious, is right: ``if comm is not None`` selects different collectives, but ``comm`` is the same
kind of value on every rank because it comes from the all-reduced flag; here every rank takes the fallback.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_ELEMENTS = 1 << 16


def _shm_free_bytes(rank):
    """Stand-in for ``shutil.disk_usage('/dev/shm').free`` on the rank's node (the second node is short)."""
    return 64 << 20 if rank == 0 else 128 << 10


class FastAllReduce:
    def __init__(self, max_elements):  # unchanged
        rank = dist.get_rank()
        needed = max_elements * 4 * 2
        if needed > _shm_free_bytes(rank):
            raise RuntimeError(f"rank {rank}: not enough shared memory for the staging buffer ({needed} bytes)")
        self.buffer = torch.zeros(max_elements)
        handle = {"rank": rank, "elements": max_elements}
        self.peers = [None] * dist.get_world_size()
        dist.all_gather_object(self.peers, handle)

    def all_reduce(self, tensor):
        dist.all_reduce(tensor)
        return tensor


def fallback_all_reduce(tensor):
    dist.reduce(tensor, dst=0)
    dist.broadcast(tensor, src=0)
    return tensor


def build_fast_all_reduce(max_elements):
    rank = dist.get_rank()
    local_ok = max_elements * 4 * 2 <= _shm_free_bytes(rank)  # the constructor's own precondition, checked first
    ok = torch.tensor([int(local_ok)])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)  # every rank takes the same path
    if not ok.item():
        if rank == 0:
            print("fast all-reduce unavailable on some rank: every rank uses the fallback")
        return None
    return FastAllReduce(max_elements)  # a failure now is a real error, raised on every rank alike


def worker():
    rank = dist.get_rank()
    comm = build_fast_all_reduce(MAX_ELEMENTS)
    for step in range(3):
        activations = torch.full((8,), float(rank + step))
        if comm is not None:
            comm.all_reduce(activations)
        else:
            fallback_all_reduce(activations)
        if rank == 0:
            print(f"step {step}: {activations[0].item()}")
    dist.barrier()


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
