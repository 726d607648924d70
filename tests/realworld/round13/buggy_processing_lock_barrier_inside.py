"""Dataset preprocessing under a one-writer file lock, with a main-process-first barrier nested inside the lock.

Modelled on ModelScope's ``processing_lock`` (modelscope/twinkle and copies of it: a ``datasets`` ``FileLock``;
the process that wins a non-blocking acquire does the writing, the others block on the lock, then acquire and
release it at once and read; "specially designed for the scenario that one writing and multiple reading ...
preprocess a dataset and generate cache files"; twinkle's later version: "The store path assumes every rank of
the group enters this the same number of times") and on modelscope/ms-swift ``swift/utils`` ``safe_ddp_context``
(barrier mode: non-main ranks wait in a barrier, the main rank runs the body and then enters the barrier).
The ``FileLock`` is the real ``filelock`` package (the one ``datasets`` re-exports).

``prepare_dataset`` takes the lock and calls ``encode_dataset``, which a library helper already wraps in
``main_process_first`` (barrier-ordered). Whichever rank wins the lock enters that helper while holding it: as
rank 0 it encodes and then waits in the barrier for rank 1; as rank 1 it waits in the barrier first. Either way
the other rank is blocked in the lock's acquire (a file lock, no timeout), outside any collective: the barrier
can never complete. gloo's timeout ends the winner's barrier, its exception leaves the ``with`` and releases
the lock, and the other rank then reaches its own barrier against a peer that has gone.
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

KIND = "buggy"
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
        acquire_lock(lock, True)  # WAITS
        lock.release()
        yield


@contextlib.contextmanager
def main_process_first():
    rank = dist.get_rank()
    if rank != 0:
        dist.barrier()  # WAITS
    yield
    if rank == 0:
        dist.barrier()  # WAITS


def encode_dataset(cache_file):
    with main_process_first():  # WAITS
        if not os.path.exists(cache_file):
            vocab = sorted({word for text in TEXTS for word in text.split()})
            encoded = [[vocab.index(word) for word in text.split()] for text in TEXTS]
            with open(cache_file, "w") as handle:
                json.dump({"vocab": vocab, "encoded": encoded}, handle)
        with open(cache_file) as handle:
            return json.load(handle)


def prepare_dataset():
    cache_file = os.path.join(lock_dir(), "toy_reviews.json")
    with processing_lock("toy_reviews"):  # WAITS
        return encode_dataset(cache_file)  # BUG  # WAITS


def worker():
    rank = dist.get_rank()
    os.makedirs(lock_dir(), exist_ok=True)
    try:
        data = prepare_dataset()  # WAITS
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
