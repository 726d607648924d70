"""TensorRT-LLM: the context executor enters the KV-transfer status check (a TP all-gather) on a rank-local condition.

Source: NVIDIA/TensorRT-LLM PR #14020 ("PyExecutor Hang in Disagg TP Prefill"), `PyExecutor`'s context-server loop
and `_check_disagg_ctx_cache_transfer_status` (whose `CacheTransceiver::checkContextTransferStatus` all-gathers over
the TP group). In disaggregated serving with TP >= 2 the entry into the status check was gated on the local capacity
scheduler's `num_fitting_reqs == 0`. Free KV-block counts drift between ranks "even by a single block" (send
completion times differ per rank), so on one iteration rank 0 fits 1 request and rank 1 fits 0: rank 1 calls the
all-gather, rank 0 goes on to the forward and its attention all-reduce. "Half the ranks at one collective, the other
half at another, neither completes."

Here (gloo, CPU, 2 ranks) each iteration schedules one 2-block context request against 2 free blocks; the previous
request's blocks come back when its transfer completes, and on iteration 2 rank 1 sees that completion one block
late. Every rank runs the forward's all-reduce every iteration (an idle rank with a padded batch). Bug: the gate is
the rank's own `num_fitting_reqs`. Fix (the PR): OR-reduce the gate across the TP ranks, so all enter the check.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

BLOCKS_PER_REQUEST = 2
ITERATIONS = 5


class ContextExecutor:
    def __init__(self, rank: int):
        self.rank = rank
        self.free_blocks = 2
        self.in_transfer = 0
        self.late_block = 0
        self.completed = 0

    def schedule(self, iteration: int) -> int:
        # the blocks of the request sent last iteration come back when its send completes, which each rank observes
        # on its own; on iteration 2 rank 1 sees one of the two blocks one iteration late
        returned = self.in_transfer * BLOCKS_PER_REQUEST + self.late_block
        self.late_block = 0
        if self.rank == 1 and iteration == 2:
            returned -= 1
            self.late_block = 1
        self.free_blocks += returned
        self.completed += self.in_transfer
        self.in_transfer = 0
        num_fitting = 1 if self.free_blocks >= BLOCKS_PER_REQUEST else 0
        self.free_blocks -= num_fitting * BLOCKS_PER_REQUEST
        return num_fitting

    def check_ctx_cache_transfer_status(self) -> int:
        status = torch.tensor([self.completed], dtype=torch.int64)
        gathered = [torch.zeros_like(status) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, status)  # WAITS
        return int(min(t.item() for t in gathered))

    def forward(self, num_fitting: int) -> float:
        activations = torch.full((4, 8), float(num_fitting + self.rank))
        dist.all_reduce(activations)  # WAITS
        return float(activations.mean())

    def step(self, iteration: int) -> float:
        num_fitting = self.schedule(iteration)
        if num_fitting == 0:  # BUG
            self.check_ctx_cache_transfer_status()  # WAITS
        out = self.forward(num_fitting)  # WAITS
        self.in_transfer = num_fitting
        return out


def worker():
    rank = dist.get_rank()
    executor = ContextExecutor(rank)
    outputs = [executor.step(i) for i in range(ITERATIONS)]  # WAITS
    print(f"[rank {rank}] {ITERATIONS} iterations, outputs {outputs}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
