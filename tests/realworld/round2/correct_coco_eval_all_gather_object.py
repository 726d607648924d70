"""torchvision's detection evaluation: each rank evaluates its own images, then the image ids and
detections of all ranks are merged with ``all_gather`` (``all_gather_object``) — rank-dependent sizes — and
the main process summarises.

Source: pytorch/vision references/detection/coco_eval.py (``merge``: ``all_img_ids = all_gather(img_ids)``,
``all_eval_imgs = all_gather(eval_imgs)``) and references/detection/utils.py (``all_gather`` over
``dist.all_gather_object``); the helper is imported from another module, as the references import ``utils``.
Correct: every rank calls ``all_gather`` the same number of times; only the payload sizes differ (rank r
evaluates r + 2 images), which ``all_gather_object`` handles.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

import r2_vision_utils as utils

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 3.0


def evaluate_shard(rank):
    image_ids = [100 * rank + i for i in range(rank + 2)]
    detections = {i: torch.rand(i % 3 + 1, 4).tolist() for i in image_ids}
    return image_ids, detections


def merge(image_ids, detections):
    all_ids = utils.all_gather(image_ids)
    all_detections = utils.all_gather(detections)
    merged_ids = sorted(i for ids in all_ids for i in ids)
    merged = {}
    for part in all_detections:
        merged.update(part)
    return merged_ids, merged


def worker():
    image_ids, detections = evaluate_shard(utils.get_rank())
    merged_ids, merged = merge(image_ids, detections)
    if utils.is_main_process():
        print(f"evaluated {len(merged_ids)} images, {sum(len(d) for d in merged.values())} detections")
    assert len(merged_ids) == sum(r + 2 for r in range(utils.get_world_size()))
    return len(merged_ids)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
