"""SGLang's hierarchical cache: ``writing_check()`` returns early before its all-reduce when this rank has no writes.

Source: sgl-project/sglang PR #26923 ("[BugFix] NCCL deadlock in HiCache writing_check by making all_reduce
unconditional", 2026); modelled on ``HiMambaRadixCache.writing_check`` (``python/sglang/srt/mem_cache``), which the
scheduler runs every step on the tensor-parallel group, and on the scheduler step that follows it (the model forward,
whose tensor-parallel all-reduce every rank makes).

What the item does: two tensor-parallel ranks serve six scheduler steps. Each step admits one request, backs its KV
pages up to the host tier when the host pool has room (write-through), polls the finished backups with
``writing_check`` and runs the forward (an all-reduce of the partial hidden states).

The bug (from the thread): "``HiMambaRadixCache.writing_check()``'s early-return before the ``all_reduce`` reliably
TP-deadlocked under concurrent load ... ``ongoing_write_through`` diverges per-rank (host-pool alloc success differs
across ranks), so one rank takes the early return and skips the collective while peers enter it -> NCCL op-sequence
desync." Here rank 1's host pool is full, so rank 1 has nothing in flight and returns early; rank 0's
``all_reduce(MIN)`` of the finished count meets rank 1's forward all-reduce and the ranks fall out of step.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

STEPS = 6
HIDDEN = 4


class HiMambaRadixCache:
    def __init__(self, rank: int):
        # rank 1's host pool is already full, so its backups cannot be allocated
        self.host_pages_free = 8 if rank == 0 else 0
        self.ongoing_write_through = {}
        self.backed_up = []
        self.tp_group = dist.group.WORLD

    def write_backup(self, node_id: int, pages: int) -> None:
        if self.host_pages_free >= pages:
            self.host_pages_free -= pages
            self.ongoing_write_through[node_id] = pages

    def _completed_writes(self) -> list:
        return sorted(self.ongoing_write_through)[:1]  # one host copy finishes per step

    def writing_check(self) -> None:
        if not self.ongoing_write_through:
            return  # BUG
        finish_count = torch.tensor(len(self._completed_writes()), dtype=torch.int64)
        dist.all_reduce(finish_count, op=dist.ReduceOp.MIN, group=self.tp_group)  # WAITS
        for node_id in self._completed_writes()[: int(finish_count.item())]:
            self.backed_up.append(node_id)
            del self.ongoing_write_through[node_id]


def forward(partial_hidden: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(partial_hidden)  # WAITS
    return partial_hidden


def event_loop(cache: HiMambaRadixCache) -> None:
    rank = dist.get_rank()
    for step in range(STEPS):
        cache.write_backup(node_id=step, pages=2)
        cache.writing_check()  # WAITS
        hidden = torch.full((HIDDEN,), float(rank + step))
        forward(hidden)  # WAITS
    if rank == 0:
        print(f"served {STEPS} steps, backed up {cache.backed_up}")


def worker():
    event_loop(HiMambaRadixCache(dist.get_rank()))  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
