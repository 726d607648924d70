"""Correct: the ranks first agree on one sorted list of metric keys, then gather every key in that order, a rank
without a key sending an empty list.

Source: EvolvingLMMs-Lab/lmms-eval PR #1089 ("Fix multi-GPU metric gather key ordering", 2026-02), found while
integrating the SAM3 / SA-Co/Gold benchmark ("that benchmark has many metric keys per sample and i ran into issues
with multi-gpu evaluation"); ``lmms_eval/evaluator.py`` ``evaluate``: each rank appends
``task_output.sample_metrics[(metric, filter_key)]`` for the metrics its own samples return, then

    for metrics in task_output.sample_metrics:
        metric_list = [None] * WORLD_SIZE if RANK == 0 else None
        torch.distributed.gather_object(obj=task_output.sample_metrics[metrics], object_gather_list=metric_list, dst=0)

followed by ``dist.barrier()``. "``gather_object`` is a collective op, all ranks have to call it for the same key at
the same time. if ranks processed different samples that insert keys in different order, the gathers misalign". The
PR's fix agrees on one sorted key list first, and "if a rank doesnt have a key it sends empty list".

Here two ranks evaluate a SAM3-style task whose ``process_results`` returns ``cgF1`` only for a sample with a positive
mask. Rank 0's shard has one, rank 1's has none: rank 0 holds three keys (inserted ``cgF1``, ``pmF1``, ``IL_MCC``),
rank 1 two (``pmF1``, ``IL_MCC``). Rank 1's two gathers pair with rank 0's first two (``cgF1`` with ``pmF1`` --
the misalignment the PR describes), rank 1 goes on to the barrier and rank 0 waits in its third gather -- that is
the buggy twin.

The fix (the PR): "each rank sends its metric keys to rank 0 via ``gather_object``; rank 0 merges everything into a
sorted set; broadcasts that order back to all ranks; everyone iterates in the same sorted order, if a rank doesnt have
a key it sends empty list".
"""

import collections
import itertools
from datetime import timedelta

import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

DOCS = [
    {"id": 0, "positive": True, "iou": 0.8},
    {"id": 1, "positive": False, "iou": 0.0},
    {"id": 2, "positive": False, "iou": 0.1},
    {"id": 3, "positive": False, "iou": 0.0},
]


def process_results(doc):
    metrics = {}
    if doc["positive"]:
        metrics["cgF1"] = doc["iou"]  # defined only where there is a mask to match
    metrics["pmF1"] = 1.0 - doc["iou"] / 2
    metrics["IL_MCC"] = 1.0 if doc["positive"] else 0.5
    return metrics


class TaskOutput:
    def __init__(self, task_name):
        self.task_name = task_name
        self.sample_metrics = collections.defaultdict(list)

    def calculate_aggregate_metric(self):
        return {k: sum(v) / len(v) for k, v in self.sample_metrics.items() if v}


def evaluate(rank, world_size):
    task_output = TaskOutput("sa_co_gold")
    filter_key = "none"
    for doc in DOCS[rank::world_size]:  # each rank evaluates its shard of the documents
        for metric, value in process_results(doc).items():
            task_output.sample_metrics[(metric, filter_key)].append(value)

    if world_size > 1:
        all_metric_keys = list(task_output.sample_metrics.keys())
        gathered_keys = [None] * world_size if rank == 0 else None
        dist.gather_object(obj=all_metric_keys, object_gather_list=gathered_keys, dst=0)
        canonical = [sorted(set(itertools.chain.from_iterable(gathered_keys)))] if rank == 0 else [None]
        dist.broadcast_object_list(canonical, src=0)
        for metrics in canonical[0]:
            metric_list = [None] * world_size if rank == 0 else None
            dist.gather_object(obj=task_output.sample_metrics.get(metrics, []), object_gather_list=metric_list, dst=0)
            if rank == 0:
                task_output.sample_metrics[metrics] = list(itertools.chain.from_iterable(metric_list))
        dist.barrier()

    if rank == 0:
        return task_output.calculate_aggregate_metric()
    return None


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    results = evaluate(rank, world_size)
    print(f"rank {rank}: results {results}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
