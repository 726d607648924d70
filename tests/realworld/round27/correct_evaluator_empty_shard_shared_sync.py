"""A detectron2-style ``DatasetEvaluator`` whose ``evaluate()`` returns early on a rank that got no images -- after
the same synchronisation method the other ranks call.

Models: detectron2 ``evaluation/evaluator.py`` (``inference_on_dataset``), ``InferenceSampler`` (contiguous
shards without padding: a rank can get no images), ``coco_evaluation.py`` / ``lvis_evaluation.py``
(``comm.gather(self._predictions, dst=0)``, non-main ranks ``return {}``, "Did not receive valid predictions");
rwightman/efficientdet-pytorch ``effdet/evaluator.py``; the fix of bo-ke/llm-internal-medicine PR #45 (every rank
enters the gather, whatever it holds).

What it does: 2 ranks run a tiny box regressor over a 1-image smoke-test split sharded like
``InferenceSampler`` (rank 0 gets the image, rank 1 nothing). ``evaluate`` runs ``_synchronize`` -- gather the
predictions on rank 0 (``gather_object``), then all-reduce the image count -- on every rank; a rank with no
predictions returns ``{}`` right after it, and rank 0 scores an L1 box error.

Why it is right although it looks rank-dependent: the empty-shard branch and the early ``return`` come after the
one call that holds both collectives, so every rank makes them in the same order; only the local scoring is
skipped.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
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

    def _synchronize(self, predictions):
        gathered = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(predictions, gathered, dst=0)
        t = torch.tensor([len(predictions)], dtype=torch.int64)
        dist.all_reduce(t)
        return gathered, int(t.item())

    def evaluate(self):
        gathered, total = self._synchronize(self._predictions)
        if not self._predictions:
            return {}  # nothing on this rank: it has joined the collectives, nothing to score
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
    return evaluator.evaluate()


def worker():
    torch.manual_seed(0)
    model = nn.Linear(16, 4)
    images = torch.randn(NUM_IMAGES, 16)
    targets = torch.rand(NUM_IMAGES, 4)
    results = inference_on_dataset(model, images, targets, BoxEvaluator())
    if dist.get_rank() == 0:
        print(f"evaluation results: {results}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
