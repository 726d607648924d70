"""Predictions appended to one file in rank order with a point-to-point "baton" that every rank takes and
passes on, including a rank whose shard ended up empty.

Models: the ``run_sequential`` exercise of torch.distributed courses (rank r waits for a token from r-1 with
``dist.recv``, does its part, passes the token to r+1 with ``dist.send``), MPI's ``MPI_File_write_ordered`` (a
collective: every rank calls it, with a count of 0 if it has nothing); huggingface/datasets
``split_dataset_by_node`` for a map-style dataset (contiguous shards, no padding); bghira/SimpleTuner PR #2995
(a rank left with no samples).

What it does: 4 ranks score an evaluation set of 12 documents. Each rank takes a contiguous shard of 3, drops
the documents longer than ``MAX_LEN`` tokens, runs the model and makes one JSON row per document; rank 2's
shard is empty after the filter. The exporter appends the rows to ``predictions.jsonl`` in rank order (wait for
the baton from the previous rank, append, pass the baton on); a rank with no rows appends nothing but still
takes and passes the baton. Rank 0 counts the rows after the final barrier.
"""

import json
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

MAX_LEN = 12
DOC_LENGTHS = [5, 9, 7, 11, 6, 8, 20, 17, 25, 4, 10, 12]


def load_shard(rank, world_size):
    g = torch.Generator().manual_seed(7)
    docs = [{"id": i, "tokens": torch.randint(0, 50, (n,), generator=g)} for i, n in enumerate(DOC_LENGTHS)]
    per_rank = len(docs) // world_size
    shard = docs[rank * per_rank:(rank + 1) * per_rank]  # split_dataset_by_node: contiguous, no padding
    return [d for d in shard if len(d["tokens"]) <= MAX_LEN]  # the length filter


def predict(model, shard):
    rows = []
    with torch.no_grad():
        for doc in shard:
            score = model(doc["tokens"]).mean().item()
            rows.append({"id": doc["id"], "score": round(score, 4)})
    return rows


def export_in_rank_order(rows, path):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    baton = torch.zeros(1)
    if rank > 0:
        dist.recv(baton, src=rank - 1)
    with open(path, "a") as f:  # an empty shard appends nothing, but the baton still goes through this rank
        for row in rows:
            f.write(json.dumps(row) + "\n")
    if rank < world_size - 1:
        dist.send(baton, dst=rank + 1)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    name = [tempfile.mkdtemp(prefix="r25_export_") if rank == 0 else None]
    dist.broadcast_object_list(name, src=0)
    path = os.path.join(name[0], "predictions.jsonl")
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 1))
        shard = load_shard(rank, world_size)
        rows = predict(model, shard)
        export_in_rank_order(rows, path)
        dist.barrier()
        if rank == 0:
            with open(path) as f:
                ids = [json.loads(line)["id"] for line in f]
            print(f"exported {len(ids)} predictions: {ids}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(name[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
