"""SGLang's hierarchical cache, fixed: ``writing_check()`` always enters its all-reduce.

Source: sgl-project/sglang PR #26923 ("[BugFix] NCCL deadlock in HiCache writing_check by making all_reduce
unconditional", 2026); the fix as validated in the thread: "always enter ``all_reduce(MIN)``; an empty rank
contributes ``finish_count=0``, a no-op". Modelled on ``HiMambaRadixCache.writing_check`` and the scheduler step
around it (the forward's tensor-parallel all-reduce).

What the item does: two tensor-parallel ranks serve six scheduler steps; each step admits one request, backs its KV
pages up to the host tier when the host pool has room (rank 1's pool is full, so it has nothing in flight), polls
finished backups with ``writing_check`` and runs the forward. Every rank makes the same two all-reduces per step;
rank 1's zero keeps the minimum at zero, so rank 0 waits for the slower rank before it frees anything, as the fix
intends.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
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
        # always enter the all-reduce: a rank with nothing in flight contributes 0, a no-op for MIN
        finish_count = torch.tensor(len(self._completed_writes()), dtype=torch.int64)
        dist.all_reduce(finish_count, op=dist.ReduceOp.MIN, group=self.tp_group)
        for node_id in self._completed_writes()[: int(finish_count.item())]:
            self.backed_up.append(node_id)
            del self.ongoing_write_through[node_id]


def forward(partial_hidden: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(partial_hidden)
    return partial_hidden


def event_loop(cache: HiMambaRadixCache) -> None:
    rank = dist.get_rank()
    for step in range(STEPS):
        cache.write_backup(node_id=step, pages=2)
        cache.writing_check()
        hidden = torch.full((HIDDEN,), float(rank + step))
        forward(hidden)
    if rank == 0:
        print(f"served {STEPS} steps, backed up {cache.backed_up}")


def worker():
    event_loop(HiMambaRadixCache(dist.get_rank()))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
