"""Rank 0 tokenizes for longer than the default group's timeout, behind a barrier on a group whose timeout covers it.

Source: huggingface/transformers issue #17106 ("Socket Timeout when using DDP": ``run_clm.py``'s
``with training_args.main_process_first(desc="dataset map tokenization")`` outlived the 30-minute group timeout)
and its fix, issue #18054 / ``TrainingArguments.ddp_timeout``: give the waiting a timeout longer than the
preparation. Here the launcher owns ``init_process_group`` (timeout 3 s), so the waiting happens on a gloo
group made with ``new_group(timeout=...)`` by every rank; rank 0 prepares for 5 s.
"""

import datetime
import os
import time
from contextlib import contextmanager

import torch
import torch.distributed as dist

from r3_shared import job_dir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3


@contextmanager
def main_process_first(group):
    is_main = dist.get_rank() == 0
    if not is_main:
        dist.barrier(group=group)
    yield
    if is_main:
        dist.barrier(group=group)


def tokenize(root: str) -> str:
    path = os.path.join(root, "tokenized.pt")
    if not os.path.exists(path):
        time.sleep(5.0)  # dataset.map(tokenize_function, num_proc=...)
        torch.save(torch.arange(64), path + ".tmp")
        os.replace(path + ".tmp", path)
    return path


def worker():
    slow_group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=60))
    root = job_dir("hf-long-prep")
    with main_process_first(slow_group):
        path = tokenize(root)
    data = torch.load(path)
    total = torch.tensor([float(data.sum())])
    dist.all_reduce(total)
    return total.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
