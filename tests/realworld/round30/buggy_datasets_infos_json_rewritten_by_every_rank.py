"""``datasets``: every process re-copies ``dataset_infos.json`` into the cache while another process reads it.

Models: huggingface/datasets PR #432 ("Fix handling of config files while loading datasets from multiple
processes"): "each process upon loading the dataset will overwrite dataset_infos.json in <package
path>/datasets/<dataset name>/<hash>/dataset_infos.json. It does so every time, even when the target file
already exists and is identical. Because multiple processes rewrite the same file in parallel, it creates a race
condition when a process tries to load the file, often resulting in a JSON decoding exception because the file
is only partially written." The PR compares the files first and copies only when they differ.
Code modelled (written here, not copied): the builder's ``download_and_prepare`` copying the script's
``dataset_infos.json`` next to the cached data, ``DatasetInfosDict.from_directory`` reading it back, a DDP
training loop after ``load_dataset`` on every rank.

2 ranks; the cache was prepared earlier and already holds an identical ``dataset_infos.json``. Both ranks load;
rank 1 starts 2.1 s later (a stand-in for its slower tokenizer import). The copy reaches a shared file system in
0.6 s pieces (a stand-in for NFS): rank 0's copy ends at 2.4 s, rank 1's runs from 2.1 s to 4.5 s. Rank 0 reads the
file back while rank 1 is rewriting it, gets a truncated
JSON and raises ``JSONDecodeError`` by itself; rank 1 loads fine and waits in its first DDP backward.
Bug: the unconditional copy (BUG). Waiting: rank 1 in ``backward`` (WAITS).
"""

import datetime
import json
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

INFOS = {
    "default": {
        "description": "toy sentiment corpus",
        "features": {"text": {"dtype": "string"}, "label": {"dtype": "int64"}},
        "splits": {"train": {"name": "train", "num_examples": 16}, "test": {"name": "test", "num_examples": 4}},
        "download_size": 2048,
        "dataset_size": 4096,
    }
}


def root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r30_datasets_{tag}")


def script_dir():
    return os.path.join(root(), "scripts", "toy_sentiment")


def cache_dir():
    return os.path.join(root(), "cache", "toy_sentiment", "default", "0.0.0", "a1b2c3")


def copy_to_shared_fs(src, dst, pieces=4, delay=0.6):
    # shutil.copyfile truncates dst and writes it; on the shared file system the bytes land in pieces
    data = open(src, "rb").read()
    step = -(-len(data) // pieces)
    with open(dst, "wb") as f:
        for i in range(0, len(data), step):
            f.write(data[i : i + step])
            f.flush()
            time.sleep(delay)


def download_and_prepare():
    src = os.path.join(script_dir(), "dataset_infos.json")
    dst = os.path.join(cache_dir(), "dataset_infos.json")
    copy_to_shared_fs(src, dst)  # BUG


def load_dataset(rank):
    download_and_prepare()
    with open(os.path.join(cache_dir(), "dataset_infos.json")) as f:
        infos = json.load(f)
    n = infos["default"]["splits"]["train"]["num_examples"]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = (x.sum(dim=1) > 0).long()
    return x[rank::2], y[rank::2]


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(root(), ignore_errors=True)
        os.makedirs(script_dir())
        os.makedirs(cache_dir())
        for d in (script_dir(), cache_dir()):  # a previous run already prepared the cache
            with open(os.path.join(d, "dataset_infos.json"), "w") as f:
                json.dump(INFOS, f, indent=2)
    dist.barrier()
    if rank == 1:
        time.sleep(2.1)  # stand-in: this rank's tokenizer import takes a little longer
    x, y = load_dataset(rank)
    torch.manual_seed(0)
    model = DDP(nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
    print(f"[rank {rank}] {x.shape[0]} examples, final loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
