"""Helper module of round 27 (not an item): a small stand-in for webdataset's pipeline stages.

Written after reading webdataset's ``DataPipeline``, ``SimpleShardList``, ``split_by_node``, ``ResampledShards``
and ``with_epoch`` (webdataset/webdataset ``webdataset/pipeline.py``, ``shardlists.py``) and the maintainers'
answers in issues #225, #250 and #434 ("split_by_node and split_by_worker determine how *shards* (not samples)
are split between nodes ... you end up with different numbers of training samples on different nodes";
"use it with ``resampled=True``"). Nothing here is copied; the names follow the library so that the items read
like the code they model.

A "shard" is generated from its URL (a stand-in for fetching and untarring ``shard-NNNNNN.tar``): 8 samples of
4 features and a 0/1 label, seeded by the shard number, so every rank sees the same shard contents.
"""

import itertools
import random

import torch
import torch.distributed as dist

SAMPLES_PER_SHARD = 8


def shard_urls(n):
    return [f"pipe:cat shards/train-{i:06d}.tar" for i in range(n)]


def open_shard(url):
    """Stand-in for reading one tar shard: yields (x, y) samples."""
    index = int(url.rsplit("-", 1)[1].split(".")[0])
    g = torch.Generator().manual_seed(1000 + index)
    x = torch.randn(SAMPLES_PER_SHARD, 4, generator=g)
    y = (x.sum(dim=1) > 0).long()
    for i in range(SAMPLES_PER_SHARD):
        yield x[i], y[i]


class SimpleShardList:
    """Every shard once, in order (webdataset's ``SimpleShardList``)."""

    def __init__(self, urls):
        self.urls = list(urls)

    def __iter__(self):
        for url in self.urls:
            yield {"url": url}


class ResampledShards:
    """An endless stream of shards drawn with replacement (webdataset's ``ResampledShards``). The generator is
    seeded per rank, as webdataset seeds it from the rank and worker, so the ranks draw different shards."""

    def __init__(self, urls, seed=0):
        self.urls = list(urls)
        self.seed = seed

    def __iter__(self):
        rank = dist.get_rank() if dist.is_initialized() else 0
        rng = random.Random(self.seed * 7919 + rank)
        while True:
            yield {"url": rng.choice(self.urls)}


def split_by_node(src):
    """Keep every world_size-th shard starting at this rank (webdataset's ``split_by_node``)."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    world_size = dist.get_world_size() if dist.is_initialized() else 1
    yield from itertools.islice(src, rank, None, world_size)


def tarfile_samples(src):
    for shard in src:
        yield from open_shard(shard["url"])


def batched(batch_size):
    def stage(src):
        xs, ys = [], []
        for x, y in src:
            xs.append(x)
            ys.append(y)
            if len(xs) == batch_size:
                yield torch.stack(xs), torch.stack(ys)
                xs, ys = [], []
        if xs:
            yield torch.stack(xs), torch.stack(ys)
    return stage


class DataPipeline:
    """The first stage is an iterable (a shard list), the others are functions from an iterator to an iterator.
    ``with_epoch(n)`` makes one pass yield exactly ``n`` items (webdataset's nominal epoch)."""

    def __init__(self, *stages):
        self.stages = stages
        self.nsamples = None

    def with_epoch(self, nsamples):
        self.nsamples = nsamples
        return self

    def __iter__(self):
        it = iter(self.stages[0])
        for stage in self.stages[1:]:
            it = stage(it)
        if self.nsamples is not None:
            it = itertools.islice(it, self.nsamples)
        return it
