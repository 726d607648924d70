"""A background prefetch thread that survives a malformed record and always puts its end marker.

Models: the ``prefetch_generator`` package's ``BackgroundGenerator`` (a ``threading.Thread`` feeding a bounded
``queue.Queue``, ``None`` as the end marker, ``__next__`` blocking in ``queue.get()``), which many public training
scripts wrap around their data loading; Python's ``threading.excepthook``; the ``ignore_index=-100`` convention of
``F.cross_entropy`` for samples without a label. The script is a learner's DDP classifier that reads its rank's
JSON-lines shard through such a prefetcher.

What it does: 2 ranks. Each rank parses its 24 JSON records in a producer generator that collates batches of 4,
wrapped in ``BackgroundGenerator``; 2 epochs of DDP training over the 6 batches. Record 13 of rank 1's shard has no
``"label"``.

Why it is correct: ``parse`` logs the malformed record and keeps the sample with the ignored label, so both ranks
still have 6 batches an epoch; and the thread puts the end marker in a ``finally``, so the consumer cannot wait on
the queue after the producer has ended.
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

KIND = "correct"
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
        try:
            for item in self.generator:
                self.queue.put(item)
        finally:
            self.queue.put(None)  # the consumer always learns that the producer is done

    def __iter__(self):
        return self

    def __next__(self):
        item = self.queue.get()
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
    if "label" not in rec:
        print(f"skipping the label of malformed record {rec.get('id')}", flush=True)
    return torch.tensor(rec["x"]), rec.get("label", IGNORE)  # the sample stays, its loss is ignored


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
        for xb, yb in BackgroundGenerator(batches(lines)):
            loss = F.cross_entropy(model(xb), yb, ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += 1
        print(f"[rank {rank}] epoch {epoch}: {seen} batches, last loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
