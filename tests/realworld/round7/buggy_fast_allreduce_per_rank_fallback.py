"""An optional fast all-reduce whose setup (which exchanges handles with a collective) is wrapped in a blanket
``try/except`` that falls back, per rank, to a slower path.

Models the pattern flagged in the review of local-inference-lab/b12x PR #147 (``b12x/comm/pcie/
pcie_allreduce.py``: ``try: return PCIeIslandRSAllReduce(exchange_group=..., ...) except Exception: return
None``; "``PCIeIslandRSAllReduce.__init__`` runs ``_broadcast_gather_object`` over ``exchange_group``. That is a
collective. Returning ``None`` on a per-rank failure breaks the group agreement and can hang the remaining
ranks"), and the rule stated in the review of NVIDIA/TensorRT-LLM PR #7507 ("Keep collectives aligned: every
rank must call Allgather exactly once").

The fast path needs a shared-memory staging buffer; its constructor checks the node's free shared memory
(``_shm_free_bytes`` stands in for ``/dev/shm``: the second node has less) and raises before the handle
exchange. Rank 1 catches that, returns ``None`` and goes on with the fallback (reduce to rank 0, then
broadcast), while rank 0 waits in the constructor's ``all_gather_object``. When rank 0's wait times out (the
group timeout, 20 s), the same blanket ``except`` swallows the timeout and rank 0 also takes the fallback, out
of step, so both ranks end in ``fallback_all_reduce`` with a timeout error.

BUG: a per-rank ``except Exception: return None`` around a constructor that makes a collective.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_ELEMENTS = 1 << 16


def _shm_free_bytes(rank):
    """Stand-in for ``shutil.disk_usage('/dev/shm').free`` on the rank's node (the second node is short)."""
    return 64 << 20 if rank == 0 else 128 << 10


class FastAllReduce:
    def __init__(self, max_elements):
        rank = dist.get_rank()
        needed = max_elements * 4 * 2
        if needed > _shm_free_bytes(rank):
            raise RuntimeError(f"rank {rank}: not enough shared memory for the staging buffer ({needed} bytes)")
        self.buffer = torch.zeros(max_elements)
        handle = {"rank": rank, "elements": max_elements}
        self.peers = [None] * dist.get_world_size()
        dist.all_gather_object(self.peers, handle)  # WAITS

    def all_reduce(self, tensor):
        dist.all_reduce(tensor)
        return tensor


def fallback_all_reduce(tensor):
    dist.reduce(tensor, dst=0)  # WAITS
    dist.broadcast(tensor, src=0)
    return tensor


def build_fast_all_reduce(max_elements):
    try:
        return FastAllReduce(max_elements)  # WAITS
    except Exception:  # BUG
        return None


def worker():
    rank = dist.get_rank()
    comm = build_fast_all_reduce(MAX_ELEMENTS)  # WAITS
    for step in range(3):
        activations = torch.full((8,), float(rank + step))
        if comm is not None:
            comm.all_reduce(activations)
        else:
            fallback_all_reduce(activations)  # WAITS
        if rank == 0:
            print(f"step {step}: {activations[0].item()}")
    dist.barrier()


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
