"""ESPnet3: the chunk iterator's per-rank batch counts differ; a BaseIterator ends the epoch on every rank together.

Source: espnet/espnet PR #6517 ("[espnet3] Add BaseIterator with DDP epoch-end sync for dataloaders", 2026-08) and
PR #6497 (the LibriTTS codec recipe where the deadlock was found); `espnet3/components/data/dataloader.py`
`DataLoaderBuilder._build_iter_factory`, espnet2's `ChunkIterFactory.build_iter`.

Rank 0's long utterances give 4 chunk batches, rank 1's short ones 2. As the PR fixes it, `DataLoaderBuilder`
wraps each per-epoch iterator in a `BaseIterator` that all-reduces a one-element has-next flag with MIN before
every batch: when rank 1 runs dry both ranks stop after 2 batches, then validate and sync the validation loss
together. Both ranks print "trained 2 batches" and the same validation loss.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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


class BaseIterator:
    """Ends the epoch on every rank at the same batch: a MIN all-reduce of a has-next flag before each yield."""

    def __init__(self, inner):
        self.inner = inner

    def __iter__(self):
        it = iter(self.inner)
        while True:
            batch = next(it, None)
            has_next = torch.tensor([0 if batch is None else 1])
            if dist.is_initialized():
                dist.all_reduce(has_next, op=dist.ReduceOp.MIN)
            if has_next.item() == 0:
                return
            yield batch


class DataLoaderBuilder:
    def __init__(self, factory):
        self.factory = factory

    def build_iter(self, epoch: int):
        return BaseIterator(self.factory.build_iter(epoch))


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
        loss.backward()
        optimizer.step()
        steps += 1
    return steps


def validate(model, val_batch):
    with torch.no_grad():
        loss = model.module(val_batch)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    utterances = [torch.randn(n, FEATS) for n in UTTERANCE_FRAMES]
    val_batch = torch.randn(BATCH, CHUNK, FEATS)
    model = DDP(CodecModel())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoaderBuilder(ChunkIterFactory(utterances, rank, world))
    steps = train_epoch(model, optimizer, loader, epoch=1)
    val = validate(model, val_batch)
    print(f"rank {rank}: epoch 1 trained {steps} batches, valid loss {val:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
