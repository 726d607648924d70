"""Rank 0 writes the other ranks' shards into a ``TemporaryDirectory`` and keeps the block open until they are read.

Models: mmcv/mmdet ``collect_results_cpu`` (rank 0's temporary directory, broadcast by name, is removed only after
every part has been read); the Python ``tempfile.TemporaryDirectory`` documentation (contents removed on completion
of the context); the DDP tutorial's write / barrier / read hand-off. The script is a learner's: rank 0 tokenises the
corpus once and hands each rank its shard through scratch files in a ``TemporaryDirectory``.

What it does: 3 ranks. Rank 0 tokenises 60 toy sentences, keeps its own shard in memory and ``torch.save``s the shards
of ranks 1 and 2 inside ``with tempfile.TemporaryDirectory(...) as scratch:``, broadcasts the directory's name, then
makes two barriers inside the block: after the first ("written") ranks 1 and 2 load their shards, after the second
("read") rank 0 leaves the block and the directory is deleted. All ranks then train a bag-of-embeddings classifier
under DDP for 5 epochs; a final barrier ends the run.
"""
import datetime
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
            dist.barrier()  # the shards are written
            dist.barrier()  # the other ranks have read them; leaving the block deletes the directory
        return shards[0]
    holder = [None]
    dist.broadcast_object_list(holder, src=0)
    dist.barrier()
    mine = torch.load(os.path.join(holder[0], f"shard_{rank}.pt"))
    dist.barrier()
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
    model = DDP(BagClassifier())
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
    worker()
    dist.destroy_process_group()
