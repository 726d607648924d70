"""A ``rank_zero_only`` vocabulary builder that writes a file, read back by every rank (correct).

Models ``lightning_utilities.core.rank_zero.rank_zero_only`` (the wrapper calls the function on rank 0 and
returns ``default``, ``None`` unless given, everywhere else) and the Lightning ``LightningDataModule`` docs'
split between ``prepare_data`` (download / tokenize / write to disk, called on one process; "do not set state
here") and ``setup`` (called on every process, reads what ``prepare_data`` wrote). The decorator here is a
minimal stand-in with the same behaviour.

A learner's text classifier under DDP: rank 0 builds the vocabulary from the corpus and writes ``vocab.json``;
after a barrier every rank reads the file, so every rank builds an ``nn.EmbeddingBag`` of the same size and the
DDP constructor's shape check and broadcast match. A ``DataLoader`` over a ``DistributedSampler`` feeds 3 epochs.
"""
import functools
import json
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

CORPUS = [
    ("the movie was great fun", 1), ("a dull and boring plot", 0), ("great acting and a fine score", 1),
    ("boring dull and far too long", 0), ("fun from start to end", 1), ("the plot was a mess", 0),
    ("fine work by the cast", 1), ("too long and a mess", 0),
] * 4


def rank_zero_only(fn, default=None):
    @functools.wraps(fn)
    def wrapped_fn(*args, **kwargs):
        if dist.get_rank() == 0:
            return fn(*args, **kwargs)
        return default
    return wrapped_fn


@rank_zero_only
def prepare_data(data_dir):
    words = sorted({word for text, _ in CORPUS for word in text.split()})
    vocab = {"<unk>": 0, **{word: i + 1 for i, word in enumerate(words)}}
    with open(os.path.join(data_dir, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    return len(vocab)


def setup(data_dir):
    with open(os.path.join(data_dir, "vocab.json")) as f:
        return json.load(f)


class ReviewDataset(Dataset):
    def __init__(self, vocab):
        self.items = [(torch.tensor([vocab.get(w, 0) for w in text.split()]), label) for text, label in CORPUS]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    tokens = [t for t, _ in batch]
    offsets = torch.tensor([0] + [len(t) for t in tokens[:-1]]).cumsum(0)
    return torch.cat(tokens), offsets, torch.tensor([label for _, label in batch])


class TextClassifier(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, 16)
        self.fc = nn.Linear(16, 2)

    def forward(self, tokens, offsets):
        return self.fc(self.embedding(tokens, offsets))


def shared_data_dir():
    box = [tempfile.mkdtemp(prefix="r15_vocab_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def worker():
    rank = dist.get_rank()
    data_dir = shared_data_dir()
    try:
        prepare_data(data_dir)
        dist.barrier()
        vocab = setup(data_dir)
        torch.manual_seed(0)
        model = DDP(TextClassifier(len(vocab)))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        dataset = ReviewDataset(vocab)
        sampler = DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=4, sampler=sampler, collate_fn=collate)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for tokens, offsets, labels in loader:
                loss = nn.functional.cross_entropy(model(tokens, offsets), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            if rank == 0:
                print(f"epoch {epoch}: last loss {loss.item():.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
