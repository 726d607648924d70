"""LongLoRA's rank-0-first dataset preparation, with the barrier's own timeout raised above the preparation
time (the fix the issue thread and HF's ``ddp_timeout`` argument point to).

Source: JIA-Lab-research/LongLoRA issue #45 (``if rank > 0: barrier()`` / tokenize on rank 0 /
``if rank == 0: barrier()``; the preparation outlived the 30-minute default) and huggingface/transformers
``TrainingArguments.ddp_timeout`` (passed as ``timeout=`` to ``init_process_group``); here the per-call
``timeout=`` of ``dist.barrier`` (torch >= 2.x) covers the preparation, the group's own 2 s does not.
Correct: the preparation (2.5 s) is longer than the group's timeout but shorter than the barrier's.
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0
PREPARATION_TIMEOUT = timedelta(seconds=30)


def tokenize(texts):
    tokens = []
    for text in texts:
        time.sleep(0.5)  # a large dataset's map(), one batch at a time
        tokens.append([ord(c) % 97 for c in text])
    return tokens


def worker():
    rank = dist.get_rank()
    if rank > 0:
        dist.barrier(timeout=PREPARATION_TIMEOUT)
    texts = ["the quick brown fox", "jumps over", "the lazy dog", "again", "and again"]
    dataset = tokenize(texts) if rank == 0 else [[ord(c) % 97 for c in t] for t in texts]
    if rank == 0:
        dist.barrier(timeout=PREPARATION_TIMEOUT)
    return sum(map(len, dataset))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
