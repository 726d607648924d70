"""Predictions appended to one file in rank order with a point-to-point "baton", skipped by a rank whose shard
ended up empty.

Models: the ``run_sequential`` exercise of torch.distributed courses (rank r waits for a token from r-1 with
``dist.recv``, does its part, passes the token to r+1 with ``dist.send``; several copies are in the public
index), MPI's ``MPI_File_write_ordered``; huggingface/datasets ``split_dataset_by_node`` for a map-style dataset
(``shard(num_shards=world_size, index=rank, contiguous=True)``, no padding, so a filter after the split can
leave a rank with nothing); bghira/SimpleTuner PR #2995 ("reject a rank the epoch-rollover re-split left with
no samples": an empty rank is not noticed, the warning only on rank 0).

What it does: 4 ranks score an evaluation set of 12 documents. Each rank takes a contiguous shard of 3, drops
the documents longer than ``MAX_LEN`` tokens (as a ``filter`` in the preprocessing), runs the model and makes one
JSON row per document. The exporter then appends the rows to ``predictions.jsonl`` in rank order: wait for the
baton from the previous rank, append, pass the baton on. Rank 0 counts the rows after the final barrier.

The bug: the exporter returns early when the rank has no rows ("nothing to write"). Documents 6-8 are all long,
so rank 2's shard is empty after the filter: it skips both its ``recv`` and its ``send`` and goes to the final
barrier with rank 0. Rank 3 waits for a baton that never comes, rank 1 for rank 2 to take its baton; the job
times out.
"""

import json
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
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
    if not rows:  # BUG
        return
    rank, world_size = dist.get_rank(), dist.get_world_size()
    baton = torch.zeros(1)
    if rank > 0:
        dist.recv(baton, src=rank - 1)  # WAITS
    with open(path, "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    if rank < world_size - 1:
        dist.send(baton, dst=rank + 1)  # WAITS


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
        export_in_rank_order(rows, path)  # WAITS
        dist.barrier()  # WAITS
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
