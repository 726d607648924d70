"""Rank 0 shares the vocabulary through a ``NamedTemporaryFile`` it never flushes; rank 1 reads an empty file.

Models: sympy/sympy PR #27069 ("Flush NamedTemporaryFile before reading": the writer must flush before the file is
reopened by name, or the reader may get nothing), holoviz/panel PR #4666 (an unflushed temporary file read as empty),
PTB-MR/mrpro PR #374 (``file.flush()`` after ``file.write()``); the distributed part is the common "rank 0 prepares,
barrier, every rank reads the file" hand-off of learner scripts (the DDP tutorial's save / barrier / load), here with
a vocabulary file as text-classification scripts write one (``json.dump(label_to_id, ...)``).

What it does: 2 ranks train a bag-of-words text classifier under DDP. Rank 0 builds the vocabulary from the corpus,
writes it as JSON into a ``NamedTemporaryFile(delete=False)`` in the run directory (so concurrent runs never clash)
and broadcasts the file's name with ``broadcast_object_list``; the other ranks open the name and ``json.load`` it.

The bug: the ``NamedTemporaryFile`` object stays open in ``vocab_file`` (rank 0 keeps it to delete the file at the
end of the run) and is never flushed or closed before the broadcast. ``json.dump`` wrote a few hundred bytes into
Python's write buffer (8 KiB), so on disk the file is still empty when rank 1 opens it:
``json.JSONDecodeError: Expecting value: line 1 column 1 (char 0)`` on rank 1. Rank 0 uses its in-memory vocabulary,
goes on into the DDP constructor and waits there for rank 1's parameter-shape check.
"""
import datetime
import json
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

CORPUS = [
    ("the match ended with a late goal", 0), ("the striker scored twice in the final", 0),
    ("fans cheered as the team won the cup", 0), ("the coach praised the young defender", 0),
    ("the central bank raised interest rates", 1), ("stocks fell after the earnings report", 1),
    ("investors worried about rising inflation", 1), ("the company reported record profits", 1),
    ("the new phone has a faster chip", 2), ("engineers released a security update", 2),
    ("the laptop battery lasts all day", 2), ("researchers trained a larger model", 2),
]


def build_vocab(corpus):
    words = sorted({w for text, _ in corpus for w in text.split()})
    return {"<unk>": 0, **{w: i + 1 for i, w in enumerate(words)}}


def encode(text, vocab):
    return torch.tensor([vocab.get(w, 0) for w in text.split()])


class BagOfWords(nn.Module):
    def __init__(self, vocab_size, num_classes=3):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab_size, 16, mode="mean")
        self.fc = nn.Linear(16, num_classes)

    def forward(self, tokens, offsets):
        return self.fc(self.emb(tokens, offsets))


def shared_run_dir(rank):
    holder = [tempfile.mkdtemp(prefix="r16_vocab_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def share_vocab(rank, run_dir):
    if rank == 0:
        vocab = build_vocab(CORPUS)
        vocab_file = tempfile.NamedTemporaryFile("w", suffix=".json", dir=run_dir, delete=False)
        json.dump(vocab, vocab_file)  # BUG
        name = [vocab_file.name]
    else:
        vocab, vocab_file, name = None, None, [None]
    dist.broadcast_object_list(name, src=0)
    if rank != 0:
        with open(name[0]) as f:
            vocab = json.load(f)
    return vocab, vocab_file


def batches(corpus, vocab, rank, world_size, batch_size=2):
    mine = corpus[rank::world_size]
    for i in range(0, len(mine), batch_size):
        chunk = mine[i:i + batch_size]
        seqs = [encode(t, vocab) for t, _ in chunk]
        offsets = torch.tensor([0] + [len(s) for s in seqs[:-1]]).cumsum(0)
        yield torch.cat(seqs), offsets, torch.tensor([y for _, y in chunk])


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    run_dir = shared_run_dir(rank)
    try:
        vocab, vocab_file = share_vocab(rank, run_dir)  # rank 0 keeps the file to delete it at the end
        model = DDP(BagOfWords(len(vocab)))  # WAITS
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for epoch in range(5):
            for tokens, offsets, labels in batches(CORPUS, vocab, rank, world_size):
                loss = F.cross_entropy(model(tokens, offsets), labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if rank == 0:
                print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            vocab_file.close()
            os.unlink(vocab_file.name)
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
