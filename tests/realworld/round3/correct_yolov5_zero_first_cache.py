"""The local master builds the dataset cache inside a helper's context manager; the others wait, then read it.

Source: ultralytics/yolov5, utils/torch_utils.py (``torch_distributed_zero_first``) as train.py and
utils/dataloaders.py use it: ``with torch_distributed_zero_first(LOCAL_RANK): data_dict = check_dataset(...)``
and the label cache is written once by local rank 0. The context manager lives in another module
(``r3_torch_utils``), as in YOLOv5.
"""

import json
import os
import time

import torch.distributed as dist

from r3_shared import job_dir
from r3_torch_utils import torch_distributed_zero_first

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 6


def check_dataset(root: str) -> dict:
    cache = os.path.join(root, "labels.cache")
    if not os.path.exists(cache):
        time.sleep(0.8)  # scanning images and labels
        tmp = cache + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"nc": 3, "n_images": 128}, f)
        os.replace(tmp, cache)
    with open(cache) as f:
        return json.load(f)


def worker():
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    root = job_dir("yolov5")
    with torch_distributed_zero_first(local_rank):
        data_dict = check_dataset(root)
    assert data_dict["n_images"] == 128
    return data_dict


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
