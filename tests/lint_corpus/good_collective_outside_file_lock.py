# File locks around the file work only, the collectives outside them; and a lock of each rank's own.
# Models Hugging Face's cache idiom (`with FileLock(lock_path):` around "build if missing", datasets and
# transformers) and ModelScope/ms-swift's `safe_ddp_context` (the barrier outside the lock); written here.
# expect: none
import os

import torch.distributed as dist
from filelock import FileLock

CACHE = "/tmp/cache/vocab.json"


def build_vocab():
    if dist.get_rank() != 0:
        dist.barrier()
    with FileLock(CACHE + ".lock"):
        if not os.path.exists(CACHE):
            with open(CACHE, "w") as f:
                f.write("{}")
    if dist.get_rank() == 0:
        dist.barrier()


def per_rank_scratch(total):
    with FileLock(f"/tmp/scratch/{dist.get_rank()}.lock"):
        dist.all_reduce(total)
