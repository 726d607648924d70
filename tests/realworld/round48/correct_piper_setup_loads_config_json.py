"""Piper TTS training (OHF-Voice/piper1-gpl PR #179, 2026-02; `piper_train` dataset.py `prepare_data` / `setup`):
multi-GPU DDP training fails because `prepare_data()` -- which Lightning runs on global rank 0 only -- is where the
data module sets `self.piper_config`; `setup()` runs on every rank and asserts the config is not None, so ranks 1+
raise AssertionError while rank 0 carries on into the DDP wrap and waits for them.

This item reproduces the data-module life cycle as Lightning drives it (prepare_data on rank 0, a barrier, setup on
every rank), with a tiny VITS-like stand-in model and a config.json written into a folder shared by both ranks.

Fix (the PR): `setup()` loads the config from the config.json that `prepare_data()` already wrote to the shared
dataset folder (the barrier between the two hooks guarantees it is complete), so every rank has it.
"""
import datetime
import json
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class PiperDataModule:
    def __init__(self, dataset_dir):
        self.dataset_dir = dataset_dir
        self.piper_config = None
        self.train_set = None

    def prepare_data(self):
        # Lightning calls this on global rank 0 only (prepare_data_per_node=False semantics here: one process).
        config = {"num_symbols": 16, "sample_rate": 22050, "num_speakers": 1, "hop_length": 256}
        with open(os.path.join(self.dataset_dir, "config.json"), "w") as f:
            json.dump(config, f)
        self.piper_config = config

    def setup(self):
        if self.piper_config is None:
            with open(os.path.join(self.dataset_dir, "config.json")) as f:
                self.piper_config = json.load(f)
        g = torch.Generator().manual_seed(7)
        n = self.piper_config["num_symbols"]
        self.train_set = [(torch.randint(0, n, (8,), generator=g), torch.randn(8, 4, generator=g)) for _ in range(4)]


class TinyVits(torch.nn.Module):
    def __init__(self, num_symbols):
        super().__init__()
        self.emb = torch.nn.Embedding(num_symbols, 4)
        self.dec = torch.nn.Linear(4, 4)

    def forward(self, ids):
        return self.dec(self.emb(ids))


def fit(dm):
    rank = dist.get_rank()
    if rank == 0:
        dm.prepare_data()
    dist.barrier()  # Lightning's barrier between prepare_data and setup
    dm.setup()
    model = DDP(TinyVits(16))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (ids, target) in enumerate(dm.train_set[rank::2]):
        loss = torch.nn.functional.mse_loss(model(ids), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    return model


def worker():
    rank = dist.get_rank()
    holder = [tempfile.mkdtemp(prefix="r48_piper_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    dm = PiperDataModule(holder[0])
    fit(dm)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(holder[0], ignore_errors=True)
    print(f"rank {rank}: training finished", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
