"""lmms-eval (fixed): the ranks agree on one sorted metric-key order before the per-metric `gather_object` loop.

Source: EvolvingLMMs-Lab/lmms-eval PR #1089 ("Fix multi-GPU metric gather key ordering"), `lmms_eval/evaluator.py`
(`evaluate`: `for metrics in task_output.sample_metrics: ... torch.distributed.gather_object(...)`). "`gather_object`
is a collective op, all ranks have to call it for the same key at the same time. If ranks processed different
samples that insert keys in different order, the gathers misalign"; a benchmark with many metric keys per sample
(SA-Co/Gold) broke multi-GPU evaluation. A key that some rank never produced is one gather fewer on that rank.

Here (gloo, CPU, 2 ranks) each rank scores its shard of a segmentation task; a sample inserts `("iou", "none")`,
`("exact_match", "none")` and, only when it has a box, `("recall", "none")`, in sample order. Rank 0's shard has a
box, rank 1's does not; after the loop rank 0 broadcasts the aggregated results to every rank. This is the fix the PR
gives: every rank's keys are gathered to rank 0, which merges and sorts them and broadcasts the order; all ranks
gather in that order, a rank without a key sending an empty list.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def score_shard(rank: int) -> dict:
    samples = [
        [{"iou": 0.61, "exact_match": 1.0, "box": True}, {"iou": 0.42, "exact_match": 0.0, "box": False}],
        [{"exact_match": 1.0, "iou": 0.77, "box": False}, {"exact_match": 0.0, "iou": 0.35, "box": False}],
    ][rank]
    sample_metrics: dict = {}
    for doc_id, sample in enumerate(samples):
        for name in ("iou", "exact_match") if rank == 0 else ("exact_match", "iou"):
            sample_metrics.setdefault((name, "none"), []).append((sample[name], doc_id))
        if sample["box"]:
            sample_metrics.setdefault(("recall", "none"), []).append((1.0, doc_id))
    return sample_metrics


def gather_metrics(rank: int, world: int, sample_metrics: dict) -> dict:
    all_keys = [None] * world if rank == 0 else None
    dist.gather_object(obj=list(sample_metrics), object_gather_list=all_keys, dst=0)
    canonical = [sorted({k for keys in all_keys for k in keys}) if rank == 0 else None]
    dist.broadcast_object_list(canonical, src=0)
    gathered = {}
    for metrics in canonical[0]:
        metric_list = [None] * world if rank == 0 else None
        dist.gather_object(obj=sample_metrics.get(metrics, []), object_gather_list=metric_list, dst=0)
        if rank == 0:
            gathered[metrics] = sum(metric_list, [])
    return gathered


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    sample_metrics = score_shard(rank)
    gathered = gather_metrics(rank, world, sample_metrics)
    results = [{k[0]: sum(v for v, _ in vals) / len(vals) for k, vals in gathered.items()} if rank == 0 else None]
    dist.broadcast_object_list(results, src=0)
    print(f"[rank {rank}] results {results[0]}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
