"""A per-layer metrics monitor under pipeline parallelism in which every stage joins the metrics all-gather,
also a stage with nothing to report.

Source: bo-ke/llm-internal-medicine PR #45 ("keep gather_and_aggregate collective on ranks with no
metrics"): the fix drops the early return on an empty local dict "so every rank that reaches the method
enters the gather" (``_gather_fn`` wraps ``all_gather_object``, a world-wide collective), while only global
rank 0 writes the jsonl record. Here: 3 ranks, each one pipeline stage of a tiny 6-block model plus an LM
head; blocks 0-3 are monitored, so stage 2 (the LM head only) contributes an empty dict, as in the PR.

Correct: the all-gather is made by every stage whatever it recorded; every rank receives the same
aggregated dict of four blocks, and rank 0 writes it.
"""

import json

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 5
STAGES = {0: ["block0", "block1", "block2"], 1: ["block3", "block4", "block5"], 2: ["lm_head"]}
MONITORED = {"block0", "block1", "block2", "block3"}


class LayerMonitor:
    def __init__(self, gather_fn=None):
        self.local_metrics = {}
        self._gather_fn = gather_fn

    def record(self, name, activations):
        if name in MONITORED:
            self.local_metrics[name] = {"max_abs": activations.abs().max().item(), "rms": activations.pow(2).mean().sqrt().item()}

    def gather_and_aggregate(self):
        if self._gather_fn is None:
            return dict(self.local_metrics)
        aggregated = {}
        for part in self._gather_fn(self.local_metrics):
            aggregated.update(part)
        return dict(sorted(aggregated.items()))


def all_gather_objects(obj):
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)
    return parts


def run_stage(rank, monitor, hidden):
    for name in STAGES[rank]:
        layer = torch.nn.Linear(hidden.shape[-1], hidden.shape[-1])
        hidden = torch.tanh(layer(hidden))
        monitor.record(name, hidden)
    return hidden


def worker():
    import r5_common

    rank = dist.get_rank()
    torch.manual_seed(rank)
    monitor = LayerMonitor(gather_fn=all_gather_objects)
    with torch.no_grad():
        run_stage(rank, monitor, torch.randn(2, 8))
    aggregated = monitor.gather_and_aggregate()
    assert sorted(aggregated) == sorted(MONITORED), aggregated
    if rank == 0:
        path = r5_common.shared_dir("layer_metrics") + ".jsonl"
        with open(path, "a") as f:
            f.write(json.dumps(aggregated) + "\n")
    return aggregated


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
