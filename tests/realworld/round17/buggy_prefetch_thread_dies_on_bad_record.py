"""A background prefetch thread dies on a malformed record on one rank; that rank waits forever on ``queue.get()``.

Models: the ``prefetch_generator`` package's ``BackgroundGenerator`` (a ``threading.Thread`` whose ``run`` puts
every item of the wrapped generator on a bounded ``queue.Queue`` and then a ``None`` end marker; ``__next__`` does
``queue.get()`` and stops on ``None``; an exception in the generator ends the thread before the marker is put), which
many public training scripts wrap around their ``DataLoader`` (``DataLoaderX`` subclasses); Python's
``threading.excepthook`` (an uncaught exception in a thread is printed and the thread ends; the process goes on).
The script is a learner's DDP classifier that reads its rank's JSON-lines shard through such a prefetcher.

What it does: 2 ranks. Each rank parses its shard of 24 JSON records (features and a label) in a producer
generator that collates batches of 4, wrapped in ``BackgroundGenerator``; 2 epochs of DDP training over the 6
batches.

The bug: record 13 of rank 1's shard has no ``"label"`` (a stand-in for a half-written line of the annotation
dump). ``parse`` raises ``KeyError`` inside the producer thread, the thread prints the traceback and ends without
putting the end marker, and rank 1's main thread blocks in ``queue.get()`` for good, outside any collective. Rank 0
waits in its fourth ``loss.backward()`` (DDP's gradient all-reduce) until the 20 s timeout. The correct twin's
producer survives a bad record (logs it, keeps the sample with an ignored label, ``-100``) and puts the end marker
in a ``finally``.
"""
import datetime
import json
import queue
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

IGNORE = -100


class BackgroundGenerator(threading.Thread):
    """prefetch_generator's BackgroundGenerator, shortened."""

    def __init__(self, generator, max_prefetch=2):
        super().__init__(daemon=True)
        self.queue = queue.Queue(max_prefetch)
        self.generator = generator
        self.start()

    def run(self):
        for item in self.generator:  # BUG
            self.queue.put(item)
        self.queue.put(None)

    def __iter__(self):
        return self

    def __next__(self):
        item = self.queue.get()  # WAITS
        if item is None:
            raise StopIteration
        return item


def read_shard(rank):
    """Stand-in for this rank's JSON-lines file; rank 1's record 13 lost its label."""
    g = torch.Generator().manual_seed(rank)
    lines = []
    for i in range(24):
        x = torch.randn(6, generator=g)
        rec = {"id": f"{rank}-{i}", "x": [round(v, 4) for v in x.tolist()], "label": int(x[0] > 0)}
        if rank == 1 and i == 13:
            del rec["label"]
        lines.append(json.dumps(rec))
    return lines


def parse(line):
    rec = json.loads(line)
    return torch.tensor(rec["x"]), rec["label"]


def batches(lines, batch_size=4):
    xs, ys = [], []
    for line in lines:
        x, y = parse(line)
        xs.append(x)
        ys.append(y)
        if len(xs) == batch_size:
            yield torch.stack(xs), torch.tensor(ys)
            xs, ys = [], []


def worker():
    rank = dist.get_rank()
    lines = read_shard(rank)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        seen = 0
        for xb, yb in BackgroundGenerator(batches(lines)):  # WAITS
            loss = F.cross_entropy(model(xb), yb, ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()  # WAITS
            opt.step()
            seen += 1
        print(f"[rank {rank}] epoch {epoch}: {seen} batches, last loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
