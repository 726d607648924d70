"""Minerva's ``get_subdataset`` with ``cache=True``, fixed: rank 0 builds and caches, the others wait and load it.

Source: Pale-Blue-Dot-97/Minerva issue #421 ("Bug in caching dataset with existing file error in distributed
computing", 2024) and its fix, commit fc61c317 "Fixed #421 using `dist.barrier`": a barrier, creation and
``cache_dataset`` on rank 0 only, a second barrier, then ``load_dataset_from_cache`` on the other ranks -- what the
maintainer proposed ("only process 0 attempts to create the dataset. All other processes should then wait until 0
is finished, then they can load the dataset from the new cache"). Modelled on ``minerva/datasets/factory.py``
``get_subdataset`` and ``minerva/datasets/utils.py`` ``cache_dataset`` (``open(path, "xb")``).

What the item does: two ranks ask for the same sub-dataset (a small in-code tile index built in about half a
second), with caching on, then train a linear model with DDP on their halves of it.
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

KIND = "correct"
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
    with open(cached_dataset_path, "xb") as fp:
        pickle.dump(dataset, fp)


def load_dataset_from_cache(cached_dataset_path: Path) -> dict:
    with open(cached_dataset_path, "rb") as fp:
        return pickle.load(fp)


def get_subdataset(params: dict, cache: bool, cache_dir: Path) -> dict:
    if cache:
        cached_dataset_path = cache_dir / f"{make_hash(params)}.obj"
        if cached_dataset_path.exists():
            sub_dataset = load_dataset_from_cache(cached_dataset_path)
        elif dist.is_available() and dist.is_initialized():
            rank = dist.get_rank()
            # Start a blocking action, ensuring only process 0 can create and cache the dataset.
            dist.barrier()
            if rank == 0:
                sub_dataset = create_subdataset(params)
                cache_dataset(sub_dataset, cached_dataset_path)
            else:
                sub_dataset = None
            # End of blocking action.
            dist.barrier()
            # Now the other processes can load the newly created cached dataset from 0.
            if rank != 0:
                sub_dataset = load_dataset_from_cache(cached_dataset_path)
        else:
            sub_dataset = create_subdataset(params)
            cache_dataset(sub_dataset, cached_dataset_path)
    else:
        sub_dataset = create_subdataset(params)
    return sub_dataset


def train(dataset: dict) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(SUB_DATASET_PARAMS["tile_size"], 1))
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
        dataset = get_subdataset(SUB_DATASET_PARAMS, cache=True, cache_dir=cache_dir)
        train(dataset)
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
