"""A detectron2-style ``DatasetEvaluator`` whose ``evaluate()`` has a separate path for a rank that got no images:
it still joins the two synchronisation collectives, so it looks complete -- but in the other order.

Models: detectron2 ``evaluation/evaluator.py`` (``inference_on_dataset``: ``reset`` / ``process`` /
``evaluate``), ``data/samplers/distributed_sampler.py`` ``InferenceSampler`` (contiguous shards, no padding, so a
rank gets no images when the dataset has fewer images than ranks), ``evaluation/coco_evaluation.py`` /
``lvis_evaluation.py`` (``comm.synchronize()``, ``comm.gather(self._predictions, dst=0)``, "Did not receive valid
predictions"); rwightman/efficientdet-pytorch ``effdet/evaluator.py`` (a distributed evaluator that keeps state
from ``add_predictions`` for the collectives of ``evaluate``); bo-ke/llm-internal-medicine PR #45 (an early path
for a rank with nothing to report in front of ``all_gather_object``).

What it does: 2 ranks run a tiny detector (a linear box regressor) over a 1-image smoke-test split sharded like
``InferenceSampler``: rank 0 gets the image, rank 1 nothing. The evaluator gathers the predictions on rank 0
(``gather_object``) and all-reduces the number of images for the "N images evaluated" line; rank 0 scores an L1
box error.

The bug: the empty-shard path of ``evaluate`` calls ``_reduce_count`` before ``_gather``, the normal path
``_gather`` before ``_reduce_count``. Rank 1's count all-reduce meets rank 0's ``gather_object`` (which starts
with an all-gather of object sizes), and the rest of the two sequences no longer pair: rank 1's
``gather_object`` and rank 0's count all-reduce wait on collectives of a different kind. Each path alone looks
like it joins every collective.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_IMAGES = 1  # the smoke-test split


def inference_shard(total, world_size, rank):
    """InferenceSampler's split: contiguous, the remainder to the first ranks, no padding."""
    size, left = divmod(total, world_size)
    sizes = [size + int(r < left) for r in range(world_size)]
    begin = sum(sizes[:rank])
    return range(begin, begin + sizes[rank])


class BoxEvaluator:
    def __init__(self, distributed=True):
        self._distributed = distributed
        self._predictions = []

    def reset(self):
        self._predictions = []

    def process(self, image_ids, boxes, targets):
        for i, box, target in zip(image_ids, boxes, targets):
            self._predictions.append({"image_id": i, "box": box.tolist(), "target": target.tolist()})

    def _gather(self, predictions):
        gathered = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(predictions, gathered, dst=0)  # WAITS
        return gathered

    def _reduce_count(self, n):
        t = torch.tensor([n], dtype=torch.int64)
        dist.all_reduce(t)  # WAITS
        return int(t.item())

    def evaluate(self):
        if not self._predictions:
            # nothing on this rank: still take part in the synchronisation so the others do not hang
            self._reduce_count(0)  # BUG # WAITS
            self._gather([])
            return {}
        gathered = self._gather(self._predictions)  # WAITS
        total = self._reduce_count(len(self._predictions))
        if dist.get_rank() != 0:
            return {}
        predictions = [p for part in gathered for p in part]
        err = sum(abs(a - b) for p in predictions for a, b in zip(p["box"], p["target"])) / (4 * len(predictions))
        return {"bbox/L1": err, "images": total}


def inference_on_dataset(model, images, targets, evaluator):
    evaluator.reset()
    shard = inference_shard(len(images), dist.get_world_size(), dist.get_rank())
    with torch.no_grad():
        for i in shard:
            boxes = model(images[i : i + 1])
            evaluator.process([i], boxes, targets[i : i + 1])
    return evaluator.evaluate()  # WAITS


def worker():
    torch.manual_seed(0)
    model = nn.Linear(16, 4)
    images = torch.randn(NUM_IMAGES, 16)
    targets = torch.rand(NUM_IMAGES, 4)
    results = inference_on_dataset(model, images, targets, BoxEvaluator())  # WAITS
    if dist.get_rank() == 0:
        print(f"evaluation results: {results}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
