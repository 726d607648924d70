"""A per-layer metrics monitor under pipeline parallelism: a stage that holds no monitored layer returns
early instead of joining the metrics all-gather.

Source: bo-ke/llm-internal-medicine PR #45 ("keep gather_and_aggregate collective on ranks with no
metrics"): ``gather_and_aggregate`` returned early when the local metric dict was empty, skipping
``_gather_fn`` — a wrapper of ``all_gather_object``, a world-wide collective; a pipeline stage made only of
empty layers and the LM head had nothing to monitor, "and when that rank skips the collective every other
rank blocks in it until the job is killed" (a 13-minute hang at PP=4 with no error output). The early
return was "a 'skip a useless collective' optimisation". Here: 3 ranks, each one pipeline stage of a tiny
6-block model plus an LM head; blocks 0-3 are monitored, stage 0 holds blocks 0-2, stage 1 blocks 3-5,
stage 2 only the LM head. Global rank 0 writes the aggregated record.

The bug: the early return on an empty local dict, before the object all-gather every rank must join.
"""

import json

import torch
import torch.distributed as dist

KIND = "buggy"
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
        if not self.local_metrics:  # BUG
            return {}
        if self._gather_fn is None:
            return dict(self.local_metrics)
        gathered = self._gather_fn(self.local_metrics)  # WAITS
        aggregated = {}
        for part in gathered:
            aggregated.update(part)
        return dict(sorted(aggregated.items()))


def all_gather_objects(obj):
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)  # WAITS
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
    aggregated = monitor.gather_and_aggregate()  # WAITS
    if rank == 0:
        path = r5_common.shared_dir("layer_metrics") + ".jsonl"
        with open(path, "a") as f:
            f.write(json.dumps(aggregated) + "\n")
    return aggregated


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
