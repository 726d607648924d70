"""Automatic batch-size detection for a tensor-parallel evaluation, the ranks agreeing on the smallest size found.

Models: lm-evaluation-harness ``HFLM._detect_batch_size`` ("if multi-GPU, always take minimum over all selected
batch sizes": each rank's size gathered, ``min`` taken), the fix for the shape of huggingface/lighteval issue #896
("Automatic batch size detection causes distributed deadlock in model parallel mode"); accelerate's
``find_executable_batch_size`` (halve until the call fits).

What it does: two ranks hold the two halves of a row-parallel linear layer (each multiplies its half of the input
features; the partial outputs are all-reduced, as Megatron's ``RowParallelLinear`` does). Both ranks score the same
12 requests. ``detect_batch_size`` halves from 16 until ``fits_in_memory`` (a stand-in probe: rank 0's node takes
8 rows, rank 1's 4) says yes, then all-reduces the result with MIN, so both ranks score 3 batches of 4 and make the
same forward all-reduces; rank 0 prints the scores.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
        dist.all_reduce(partial)
        return partial


def fits_in_memory(batch_size):
    """Stand-in for a trial forward under ``find_executable_batch_size``: no OOM below the node's budget."""
    return batch_size <= MEMORY_BUDGET_ROWS[dist.get_rank()]


def detect_batch_size(start=16):
    batch_size = start
    while batch_size > 1 and not fits_in_memory(batch_size):
        batch_size //= 2
    if dist.get_world_size() > 1:
        # as lm-evaluation-harness does: every rank uses the smallest size any rank found
        found = torch.tensor([batch_size])
        dist.all_reduce(found, op=dist.ReduceOp.MIN)
        batch_size = int(found.item())
    return batch_size


def score_requests(layer, requests, batch_size):
    scores = []
    with torch.no_grad():
        for i in range(0, len(requests), batch_size):
            logits = layer(requests[i:i + batch_size])
            scores.append(torch.log_softmax(logits, dim=-1)[:, 0])
    return torch.cat(scores)


def worker():
    torch.manual_seed(0)
    weight = torch.randn(OUT_FEATURES, IN_FEATURES)
    requests = torch.randn(12, IN_FEATURES)
    layer = RowParallelLinear(weight)
    batch_size = detect_batch_size()
    scores = score_requests(layer, requests, batch_size)
    if dist.get_rank() == 0:
        print(f"batch size {batch_size}: mean score {scores.mean().item():.4f} over {scores.numel()} requests")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
