"""nnU-Net: every DDP rank creates `splits_final.json` if it is missing; a late rank reads it half-written.

Source: MIC-DKFZ/nnUNet issue #3064 ("Race condition in nnUNetTrainer.do_split(): concurrent trainings can read a
partially written splits_final.json", 2026-09) and PR #3065 ("Write splits_final.json to temporary file first and
then rename"); `nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py` `do_split`, batchgenerators' `save_json` /
`load_json`.

With `-num_gpus 2` on a dataset trained for the first time, each DDP rank runs `do_split()`: `if not
isfile(splits_file)` it logs "Creating new 5-fold cross-validation split...", builds the (seeded, identical) split
and `save_json`s it; otherwise it `load_json`s the file. `json.dump` writes the file piece by piece and the
preprocessed folder sits on a shared filesystem (a stand-in writes 1 KiB blocks, 0.03 s each); rank 1, 0.4 s behind
(its dataset unpacking is slower), finds the file already created, loads it mid-write and dies with
`json.decoder.JSONDecodeError` (the issue's "Expecting ',' delimiter: line 318 column 25"). Rank 0 goes on into
training and fails in DDP's collectives when its peer is gone. The fix (the PR): write the JSON to a temporary file
in the same folder and `os.replace` it onto `splits_final.json`, so a reader sees no file or a complete one.
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

KIND = "buggy"
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
    with SharedFsFile(file, "w") as f:
        json.dump(obj, f, sort_keys=False, indent=4)  # BUG


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
        network = DDP(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)))  # WAITS
        optimizer = torch.optim.SGD(network.parameters(), lr=0.01)
        torch.manual_seed(10 + self.rank)
        for _ in range(3):
            loss = network(torch.randn(4, 8)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
        return len(train_keys), len(val_keys), loss.item()


def worker():
    rank = dist.get_rank()
    folder = [tempfile.mkdtemp(prefix="r46_nnUNet_preprocessed_") if rank == 0 else None]
    dist.broadcast_object_list(folder, src=0)  # nnUNet_preprocessed/Dataset220: the same folder on every node
    identifiers = [f"case_{i:04d}" for i in range(600)]
    try:
        trainer = nnUNetTrainer(folder[0], fold=0)
        n_train, n_val, loss = trainer.run_training(identifiers)  # WAITS
        print(f"rank {rank}: fold 0 with {n_train} training / {n_val} validation cases, final loss {loss:.4f}",
              flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(folder[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
