"""Minerva's ``get_subdataset`` with ``cache=True``: every rank misses the cache, builds the dataset and caches it.

Source: Pale-Blue-Dot-97/Minerva issue #421 ("Bug in caching dataset with existing file error in distributed
computing", 2024) and its fix, commit fc61c317 "Fixed #421 using `dist.barrier`"; modelled on
``minerva/datasets/factory.py`` ``get_subdataset`` (hash of the dataset parameters, ``cached_dataset_path.exists()``,
``create_subdataset``, ``cache_dataset``) and ``minerva/datasets/utils.py`` ``cache_dataset``, which pickles the
dataset with ``open(cached_dataset_path, "xb")``.

What the item does: two ranks ask for the same sub-dataset (a small in-code tile index built in about half a
second), with caching on, then train a linear model with DDP on their halves of it.

The bug (the maintainer's diagnosis in the issue): "each process of a distributed process group sees that the
dataset requested does not exist, hence they all try to independently create and they cache the dataset. As this
will be in the same location, a conflict arises when the slower processes try caching to a now extant dataset":
the second ``open(..., "xb")`` raises ``FileExistsError`` and that rank dies, while the other waits for it in DDP's
constructor, whose parameter broadcast needs both ranks.
"""

import datetime
import hashlib
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

SUB_DATASET_PARAMS = {"name": "NAIP-tiles", "paths": ["tiles/2020"], "crs": 26918, "tile_size": 4}


def shared_cache_dir() -> Path:
    holder = [tempfile.mkdtemp(prefix="minerva_cache_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return Path(holder[0])


def make_hash(params: dict) -> str:
    return hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()[:16]


def create_subdataset(params: dict) -> dict:
    """Index the tiles (the slow part: about half a second here)."""
    time.sleep(0.5)
    generator = torch.Generator().manual_seed(7)
    return {"features": torch.randn(32, params["tile_size"], generator=generator),
            "labels": torch.randn(32, 1, generator=generator)}


def cache_dataset(dataset: dict, cached_dataset_path: Path) -> None:
    cached_dataset_path.parent.mkdir(parents=True, exist_ok=True)
    with open(cached_dataset_path, "xb") as fp:  # WAITS
        pickle.dump(dataset, fp)


def load_dataset_from_cache(cached_dataset_path: Path) -> dict:
    with open(cached_dataset_path, "rb") as fp:
        return pickle.load(fp)


def get_subdataset(params: dict, cache: bool, cache_dir: Path) -> dict:
    if cache:
        cached_dataset_path = cache_dir / f"{make_hash(params)}.obj"
        if cached_dataset_path.exists():
            sub_dataset = load_dataset_from_cache(cached_dataset_path)
        else:
            sub_dataset = create_subdataset(params)
            cache_dataset(sub_dataset, cached_dataset_path)  # BUG WAITS
    else:
        sub_dataset = create_subdataset(params)
    return sub_dataset


def train(dataset: dict) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(SUB_DATASET_PARAMS["tile_size"], 1))  # WAITS
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    features, labels = dataset["features"][rank::world], dataset["labels"][rank::world]
    for start in range(0, len(features), 4):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(features[start:start + 4]), labels[start:start + 4])
        loss.backward()
        optimizer.step()


def worker():
    cache_dir = shared_cache_dir()
    try:
        dataset = get_subdataset(SUB_DATASET_PARAMS, cache=True, cache_dir=cache_dir)  # WAITS
        train(dataset)  # WAITS
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
