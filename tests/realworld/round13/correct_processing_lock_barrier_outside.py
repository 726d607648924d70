"""Dataset preprocessing under a one-writer file lock, the main-process-first barrier taken outside the lock.

Modelled on ModelScope's ``processing_lock`` (modelscope/twinkle and copies of it: a ``datasets`` ``FileLock``;
the winner of a non-blocking acquire writes, the others block on the lock, then acquire and release it and
read) and modelscope/ms-swift ``swift/utils`` ``safe_ddp_context`` (barrier mode), and on twinkle's later
``processing_lock`` (ranks ordered "global master -> node masters -> everyone else", the body run on every rank).
The ``FileLock`` is the real ``filelock`` package (the one ``datasets`` re-exports).

Same pieces as the buggy twin, nested the other way: ``prepare_dataset`` enters ``main_process_first`` (the
barrier ordering) and only then takes the file lock around the cache file's check, write and read. Rank 0 takes
the lock while rank 1 waits in the barrier, writes the cache, releases the lock and then enters the barrier;
rank 1 then takes the lock (free) and reads. No rank ever waits in a collective while holding the lock. What
looks suspicious and is right: a barrier and a file lock in the same function, a write on one rank and reads
on the others, and a lock acquire that may block.
"""

import contextlib
import datetime
import json
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
from filelock import FileLock, Timeout

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TEXTS = ["a fine film", "dull and long", "fine acting", "long but fine", "a dull plot", "plot and acting"]


def lock_dir():
    return os.path.join(tempfile.gettempdir(), f"r13_locks_{os.environ.get('MASTER_PORT', 'local')}")


def acquire_lock(lock, blocking):
    try:
        lock.acquire(timeout=-1 if blocking else 0)
        return True
    except Timeout:
        return False


@contextlib.contextmanager
def processing_lock(name):
    lock = FileLock(os.path.join(lock_dir(), f"{name}.lock"))
    if acquire_lock(lock, False):
        try:
            yield
        finally:
            lock.release()
    else:
        acquire_lock(lock, True)
        lock.release()
        yield


@contextlib.contextmanager
def main_process_first():
    rank = dist.get_rank()
    if rank != 0:
        dist.barrier()
    yield
    if rank == 0:
        dist.barrier()


def encode_dataset(cache_file):
    with processing_lock("toy_reviews"):
        if not os.path.exists(cache_file):
            vocab = sorted({word for text in TEXTS for word in text.split()})
            encoded = [[vocab.index(word) for word in text.split()] for text in TEXTS]
            with open(cache_file, "w") as handle:
                json.dump({"vocab": vocab, "encoded": encoded}, handle)
        with open(cache_file) as handle:
            return json.load(handle)


def prepare_dataset():
    cache_file = os.path.join(lock_dir(), "toy_reviews.json")
    with main_process_first():
        return encode_dataset(cache_file)


def worker():
    rank = dist.get_rank()
    os.makedirs(lock_dir(), exist_ok=True)
    try:
        data = prepare_dataset()
        sizes = torch.tensor([len(data["vocab"]), len(data["encoded"])])
        dist.all_reduce(sizes)
        print(f"rank {rank}: vocab {len(data['vocab'])}, {len(data['encoded'])} texts; summed {sizes.tolist()}",
              flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            time.sleep(0.5)
            shutil.rmtree(lock_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
