"""Rank 0 writes the other ranks' shards into a ``TemporaryDirectory``; the barrier comes after the ``with`` deletes it.

Models: mmcv/mmdet ``collect_results_cpu`` (rank 0 makes the temporary directory with ``tempfile.mkdtemp``, broadcasts
its name, the ranks write their parts, ``dist.barrier()``, rank 0 reads them and only then ``shutil.rmtree(tmpdir)``:
the directory lives until every reader is done); the Python ``tempfile.TemporaryDirectory`` documentation (the
directory and its contents are removed on completion of the context); the DDP tutorial's write / barrier / read
hand-off. The script is a learner's: rank 0 tokenises the corpus once and hands each rank its shard through scratch
files, using ``TemporaryDirectory`` so that the scratch space is cleaned up automatically.

What it does: 3 ranks. Rank 0 tokenises 60 toy sentences, keeps its own shard in memory and ``torch.save``s the shards
of ranks 1 and 2 into ``with tempfile.TemporaryDirectory(...) as scratch:``; it broadcasts the directory's name with
``broadcast_object_list`` inside the block. Then every rank calls ``dist.barrier()`` ("the shards are written") and
ranks 1 and 2 ``torch.load`` theirs; all ranks then train a bag-of-embeddings classifier under DDP.

The bug: the barrier is placed after the ``with`` block, so rank 0 leaves the block -- which deletes the directory --
before it reaches the barrier. The barrier orders the reads after the writes but also after the deletion: ranks 1
and 2 get ``FileNotFoundError`` in ``torch.load``; rank 0 goes on into the DDP constructor and waits there.
"""
import datetime
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

WORDS = ["good", "great", "fine", "bad", "awful", "poor", "film", "plot", "acting", "music", "very", "not"]


def raw_corpus(n=60):
    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(n):
        idx = torch.randint(0, len(WORDS), (6,), generator=g).tolist()
        text = " ".join(WORDS[i] for i in idx)
        label = int(sum(w in ("good", "great", "fine") for w in text.split()) >
                    sum(w in ("bad", "awful", "poor") for w in text.split()))
        rows.append((text, label))
    return rows


def tokenize(rows):
    vocab = {w: i for i, w in enumerate(WORDS)}
    ids = torch.tensor([[vocab[w] for w in text.split()] for text, _ in rows])
    return {"ids": ids, "labels": torch.tensor([y for _, y in rows])}


def prepare_shards(rank, world_size):
    if rank == 0:
        rows = raw_corpus()
        shards = [tokenize(rows[r::world_size]) for r in range(world_size)]
        with tempfile.TemporaryDirectory(prefix="r16_shards_") as scratch:
            for r in range(1, world_size):
                torch.save(shards[r], os.path.join(scratch, f"shard_{r}.pt"))
            dist.broadcast_object_list([scratch], src=0)
        mine = shards[0]
    else:
        holder = [None]
        dist.broadcast_object_list(holder, src=0)
        scratch = holder[0]
    dist.barrier()  # BUG
    if rank != 0:
        mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))
    return mine


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(len(WORDS), 16)
        self.fc = nn.Linear(16, 2)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    shard = prepare_shards(rank, world_size)
    model = DDP(BagClassifier())  # WAITS
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for epoch in range(5):
        for i in range(0, len(shard["ids"]), 5):
            loss = F.cross_entropy(model(shard["ids"][i:i + 5]), shard["labels"][i:i + 5])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
