# A collective made while holding a cross-process file lock: one rank holds the lock, the others wait to take it,
# outside any collective, while the holder waits in the barrier for them.
# Models Hugging Face's cache idiom (`with FileLock(lock_path):` around "build if missing", datasets and
# transformers) with a main-process-first barrier moved inside it, and ModelScope/ms-swift's `processing_lock`
# context manager (a FileLock taken before its yield); written here.
# expect: 24 lock-held dist.barrier
# expect: 32 lock-held dist.all_reduce
# expect: 51 hidden-collective build -> dist.barrier
import contextlib
import os

import torch
import torch.distributed as dist
from filelock import FileLock

CACHE = "/tmp/cache/vocab.json"


def build_vocab():
    with FileLock(CACHE + ".lock"):
        if not os.path.exists(CACHE):
            with open(CACHE, "w") as f:
                f.write("{}")
        dist.barrier()


def count_tokens(total):
    lock = FileLock(CACHE + ".count.lock")
    with lock:
        with open(CACHE) as f:
            f.read()
        dist.all_reduce(total)


@contextlib.contextmanager
def processing_lock(name):
    lock = FileLock(os.path.join("/tmp/locks", name + ".lock"))
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def build():
    dist.barrier()


def prepare():
    with processing_lock("reviews"):
        build()
    count_tokens(torch.zeros(1))
