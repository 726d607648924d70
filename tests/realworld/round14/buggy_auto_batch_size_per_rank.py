"""Automatic batch-size detection for a tensor-parallel evaluation, each rank keeping the size it found.

Models: huggingface/lighteval issue #896 ("Automatic batch size detection causes distributed deadlock in model
parallel mode": the log stops after "Detecting largest batch size..."), and the fix lm-evaluation-harness carries
in ``HFLM._detect_batch_size`` ("if multi-GPU, always take minimum over all selected batch sizes": each rank's
size is gathered with ``accelerator.gather`` and ``min`` taken); accelerate's ``find_executable_batch_size``
(halve the batch size until the call fits).

What it does: two ranks hold the two halves of a row-parallel linear layer (each rank multiplies its half of the
input features; the partial outputs are all-reduced, as Megatron's ``RowParallelLinear`` does). Both ranks score
the same 12 requests. ``detect_batch_size`` starts at 16 and halves until ``fits_in_memory`` says yes, then the
requests are scored in batches of that size and rank 0 prints the scores.

The bug: ``fits_in_memory`` stands in for a probe on hardware that differs by node: rank 0's budget takes 8 rows,
rank 1's only 4, and ``detect_batch_size`` returns each rank's own answer. Rank 0 scores batches of 8, rank 1 of 4:
the first forward's all-reduce gets 8x3 values from one rank and 4x3 from the other, and gloo fails on the size
mismatch (on a backend that did not check, the ranks would make 2 and 3 forward all-reduces and hang).
"""
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

IN_FEATURES, OUT_FEATURES = 8, 3
MEMORY_BUDGET_ROWS = {0: 8, 1: 4}   # stand-in: rank 1 runs on a node with a smaller accelerator


class RowParallelLinear(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        rank, world = dist.get_rank(), dist.get_world_size()
        chunk = IN_FEATURES // world
        self.cols = slice(rank * chunk, (rank + 1) * chunk)
        self.weight = torch.nn.Parameter(weight[:, self.cols].clone())

    def forward(self, x):
        partial = x[:, self.cols] @ self.weight.t()
        dist.all_reduce(partial)  # WAITS
        return partial


def fits_in_memory(batch_size):
    """Stand-in for a trial forward under ``find_executable_batch_size``: no OOM below the node's budget."""
    return batch_size <= MEMORY_BUDGET_ROWS[dist.get_rank()]


def detect_batch_size(start=16):
    batch_size = start
    while batch_size > 1 and not fits_in_memory(batch_size):
        batch_size //= 2
    return batch_size  # BUG


def score_requests(layer, requests, batch_size):
    scores = []
    with torch.no_grad():
        for i in range(0, len(requests), batch_size):
            logits = layer(requests[i:i + batch_size])  # WAITS
            scores.append(torch.log_softmax(logits, dim=-1)[:, 0])
    return torch.cat(scores)


def worker():
    torch.manual_seed(0)
    weight = torch.randn(OUT_FEATURES, IN_FEATURES)
    requests = torch.randn(12, IN_FEATURES)
    layer = RowParallelLinear(weight)
    batch_size = detect_batch_size()
    scores = score_requests(layer, requests, batch_size)  # WAITS
    if dist.get_rank() == 0:
        print(f"batch size {batch_size}: mean score {scores.mean().item():.4f} over {scores.numel()} requests")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
