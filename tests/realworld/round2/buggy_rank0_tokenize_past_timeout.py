"""LongLoRA's fine-tuning script: the non-zero ranks wait in a barrier while rank 0 loads and tokenizes the
dataset; the preparation takes longer than the process group's timeout.

Source: JIA-Lab-research/LongLoRA issue #45 ("Timeout after 30 minutes problem": ``if rank > 0: barrier()``,
``load_dataset`` + ``dataset.map(tokenize)``, ``if rank == 0: barrier()``; the preparation took more than
the 30-minute default), also hiyouga/LlamaFactory issue #2424 and axolotl-ai-cloud/axolotl issue #2684
(tokenization past the timeout in ``main_process_first``). Scaled down: a 2 s group timeout, 4 s of
tokenization.
Bug: the preparation on rank 0 outlasts the group's timeout (BUG); the other ranks' barrier times out first
(WAITS).
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def tokenize(texts):
    tokens = []
    for text in texts:
        time.sleep(1.0)  # a large dataset's map(), one batch at a time
        tokens.append([ord(c) % 97 for c in text])
    return tokens


def worker():
    rank = dist.get_rank()
    if rank > 0:
        dist.barrier()  # WAITS
    texts = ["the quick brown fox", "jumps over", "the lazy dog", "again"]
    dataset = tokenize(texts)  # BUG
    if rank == 0:
        dist.barrier()
    return sum(map(len, dataset))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
