"""``main_process_first`` around a tokenization that outlives the group's timeout.

Source: huggingface/transformers issue #17106 ("Socket Timeout when using DDP"): in
examples/pytorch/language-modeling/run_clm.py, ``with training_args.main_process_first(desc="dataset map
tokenization"):`` makes the replicas wait in a barrier while the main process maps the dataset; the map took
longer than the 30-minute timeout and the replicas failed in ``__enter__``. Here the timeout is 3 s and the
map takes 6 s.

The bug: preparation longer than the timeout of the barrier that waits for it.
"""

import os
import time
from contextlib import contextmanager

import torch
import torch.distributed as dist

from r3_shared import job_dir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 3


@contextmanager
def main_process_first(local_rank: int, desc: str = "work"):
    is_main = local_rank == 0
    try:
        if not is_main:
            dist.barrier()  # WAITS
        yield
    finally:
        if is_main:
            dist.barrier()


def tokenize_dataset(root: str) -> str:
    path = os.path.join(root, "tokenized.pt")
    if not os.path.exists(path):
        time.sleep(6.0)  # BUG: raw_datasets.map(tokenize_function, batched=True)
        torch.save(torch.arange(32), path)
    return path


def worker():
    local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    with main_process_first(local_rank, desc="dataset map tokenization"):  # WAITS
        path = tokenize_dataset(job_dir("hf-timeout"))
    return int(torch.load(path).sum())


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
