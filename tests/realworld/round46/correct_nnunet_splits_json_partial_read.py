"""nnU-Net: `splits_final.json` written to a temporary file and renamed into place, so no rank reads it half-written.

Source: MIC-DKFZ/nnUNet issue #3064 ("Race condition in nnUNetTrainer.do_split(): concurrent trainings can read a
partially written splits_final.json", 2026-09) and PR #3065 ("Write splits_final.json to temporary file first and
then rename"); `nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py` `do_split`, batchgenerators' `save_json`.

Both DDP ranks of a first `-num_gpus 2` training run `do_split()`. As the PR fixes it, `save_json` writes to a
temporary file in the same folder (on the shared filesystem stand-in: 1 KiB blocks, 0.03 s each) and `os.replace`s
it onto `splits_final.json`. Rank 1, 0.4 s behind, sees no split file yet, builds the same seeded split and renames
its own copy into place; neither rank ever reads a partial file, and both train fold 0 on 480 / 120 cases.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

BLOCK, BLOCK_LATENCY = 1024, 0.03  # the shared filesystem stand-in


class SharedFsFile:
    """A file on the cluster's shared filesystem: data reaches the server in blocks, each after a delay."""

    def __init__(self, path, mode):
        self.f = open(path, mode)
        self.buf = ""

    def write(self, s):
        self.buf += s
        while len(self.buf) >= BLOCK:
            self.f.write(self.buf[:BLOCK])
            self.f.flush()
            self.buf = self.buf[BLOCK:]
            time.sleep(BLOCK_LATENCY)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.write(self.buf)
        self.f.close()


def save_json(obj, file):
    """Write to a temporary file in the same folder, then rename it into place (atomic on POSIX)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), prefix=".splits_", suffix=".tmp")
    os.close(fd)
    try:
        with SharedFsFile(tmp, "w") as f:
            json.dump(obj, f, sort_keys=False, indent=4)
        os.replace(tmp, file)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_json(file):
    with open(file) as f:
        return json.load(f)


def generate_crossval_split(keys, seed=12345, n_splits=5):
    rng = torch.Generator().manual_seed(seed)
    perm = [keys[i] for i in torch.randperm(len(keys), generator=rng)]
    return [{"train": sorted(k for j, k in enumerate(perm) if j % n_splits != fold),
             "val": sorted(k for j, k in enumerate(perm) if j % n_splits == fold)} for fold in range(n_splits)]


class nnUNetTrainer:
    def __init__(self, preprocessed_folder, fold):
        self.preprocessed_folder, self.fold = preprocessed_folder, fold
        self.rank = dist.get_rank()

    def print_to_log_file(self, *args):
        print(f"rank {self.rank}:", *args, flush=True)

    def do_split(self, identifiers):
        splits_file = os.path.join(self.preprocessed_folder, "splits_final.json")
        if not os.path.isfile(splits_file):
            self.print_to_log_file("Creating new 5-fold cross-validation split...")
            splits = generate_crossval_split(sorted(identifiers), seed=12345, n_splits=5)
            save_json(splits, splits_file)
        else:
            self.print_to_log_file("Using splits from existing split file:", splits_file)
            splits = load_json(splits_file)
        return splits[self.fold]["train"], splits[self.fold]["val"]

    def run_training(self, identifiers):
        time.sleep(0.4 * self.rank)  # unpacking the dataset: rank 1 arrives a little later
        train_keys, val_keys = self.do_split(identifiers)
        torch.manual_seed(0)
        network = DDP(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)))
        optimizer = torch.optim.SGD(network.parameters(), lr=0.01)
        torch.manual_seed(10 + self.rank)
        for _ in range(3):
            loss = network(torch.randn(4, 8)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return len(train_keys), len(val_keys), loss.item()


def worker():
    rank = dist.get_rank()
    folder = [tempfile.mkdtemp(prefix="r46_nnUNet_preprocessed_") if rank == 0 else None]
    dist.broadcast_object_list(folder, src=0)  # nnUNet_preprocessed/Dataset220: the same folder on every node
    identifiers = [f"case_{i:04d}" for i in range(600)]
    try:
        trainer = nnUNetTrainer(folder[0], fold=0)
        n_train, n_val, loss = trainer.run_training(identifiers)
        print(f"rank {rank}: fold 0 with {n_train} training / {n_val} validation cases, final loss {loss:.4f}",
              flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(folder[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
