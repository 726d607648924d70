"""ESPnet3: the chunk iterator yields a data-dependent number of batches per rank; one rank leaves the epoch early.

Source: espnet/espnet PR #6517 ("[espnet3] Add BaseIterator with DDP epoch-end sync for dataloaders", 2026-08) and
PR #6497 (the LibriTTS codec recipe where it was found: "a rank that receives longer audio splits it into more
chunks. When one rank runs out of batches while another still has some, the ranks disagree on when to enter
validation and training deadlocks"); `espnet3/components/data/dataloader.py` `DataLoaderBuilder._build_iter_factory`,
espnet2's `ChunkIterFactory.build_iter`.

ESPnet3 strides whole utterance batches over the ranks (`batches[rank::world_size]`); the chunk iterator cuts each
utterance into fixed-length overlapping chunks, so the number of chunk batches follows the audio lengths. Rank 0's
two 64-frame utterances give 14 chunks (4 batches of 4), rank 1's two 40-frame utterances 8 chunks (2 batches).
Training is DDP (gradients all-reduced in `backward`); at the end of its epoch a rank validates and syncs the
validation loss (`self.log(..., sync_dist=True)`). Rank 1 reaches that all-reduce while rank 0 is in the backward
of its third batch. The fix (the PR): every per-epoch iterator is wrapped in a `BaseIterator` that all-reduces a
one-element has-next flag with MIN before yielding each batch, so every rank ends the epoch at the same batch.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

CHUNK, SHIFT, FEATS, BATCH = 16, 8, 5, 4
UTTERANCE_FRAMES = [64, 40, 64, 40]  # strided over 2 ranks: rank 0 gets the long ones


class ChunkIterFactory:
    """espnet2's chunk iterator: fixed-length overlapping chunks, batched; the count depends on the audio."""

    def __init__(self, utterances, rank, world_size):
        self.utterances = utterances[rank::world_size]

    def build_iter(self, epoch: int):
        chunks = []
        for utt in self.utterances:
            for start in range(0, utt.shape[0] - CHUNK + 1, SHIFT):
                chunks.append(utt[start:start + CHUNK])
        for i in range(0, len(chunks), BATCH):
            yield torch.stack(chunks[i:i + BATCH])


class DataLoaderBuilder:
    def __init__(self, factory):
        self.factory = factory

    def build_iter(self, epoch: int):
        return self.factory.build_iter(epoch)  # BUG


class CodecModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(FEATS, 3)
        self.dec = nn.Linear(3, FEATS)

    def forward(self, x):
        return (self.dec(torch.tanh(self.enc(x))) - x).pow(2).mean()


def train_epoch(model, optimizer, loader, epoch):
    steps = 0
    for batch in loader.build_iter(epoch):
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        steps += 1
    return steps


def validate(model, val_batch):
    with torch.no_grad():
        loss = model.module(val_batch)
    dist.all_reduce(loss)  # WAITS
    return loss.item() / dist.get_world_size()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    utterances = [torch.randn(n, FEATS) for n in UTTERANCE_FRAMES]
    val_batch = torch.randn(BATCH, CHUNK, FEATS)
    model = DDP(CodecModel())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoaderBuilder(ChunkIterFactory(utterances, rank, world))
    steps = train_epoch(model, optimizer, loader, epoch=1)  # WAITS
    val = validate(model, val_batch)  # WAITS
    print(f"rank {rank}: epoch 1 trained {steps} batches, valid loss {val:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
