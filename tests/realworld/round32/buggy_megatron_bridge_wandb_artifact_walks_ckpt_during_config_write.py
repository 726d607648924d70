"""Megatron Bridge: the last rank's W&B artifact walks the checkpoint directory while rank 0 still writes the config.

Models: NVIDIA-NeMo/Megatron-Bridge PR #591 ("Add global barrier after checkpoint save to ensure synchronization
across ranks": "When saving the config in rank 0 using ``cfg.to_yaml(config_filename)``, a tmp file is created.
During this process, in the last rank (which runs the wandb reporter), walks the checkpoint directory, containing
the above tmp file. Then, when reporting of each file occurs, the tmp file is no longer present which causes a
FileNotFound exception"). Code modelled (written here, not copied): ``src/megatron/bridge/training/checkpointing.py``
``save_checkpoint`` (every rank writes its shard of the distributed checkpoint, the save's own synchronisation, then
rank 0 writes the tracker file and the run config), the config's ``to_yaml`` (a temporary file in the same folder,
renamed into place), Megatron's ``wandb_utils.on_save_checkpoint_success`` (called on the last rank: a W&B artifact
that ``add_dir``-s the checkpoint folder, then ``log_artifact``), and the training loop that saves every
``save_interval`` iterations.

2 ranks, a small model under DDP, a save after iteration 3. Timing stand-ins: the config dump takes 1.0 s between
creating the temporary file and renaming it; the W&B reporter starts its walk 0.3 s after the save and hashes each
file in 0.4 s (large shards). The walk lists ``run_config.yaml.<random>.tmp``; when it comes to hash it, rank 0 has
renamed it, and rank 1 raises ``FileNotFoundError``. Rank 0 goes on to iteration 4 and waits in its backward.
Bug: the W&B report on the last rank with no barrier after rank 0's writes of the save (BUG); waiting: rank 0 in
iteration 4's DDP backward (WAITS). Rank 1 fails by itself.
"""

import datetime
import hashlib
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

TRAIN_ITERS = 6
SAVE_INTERVAL = 3
CONFIG_DUMP_SECONDS = 1.0
WANDB_START_SECONDS = 0.3
HASH_SECONDS_PER_FILE = 0.4


def save_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r32_mbridge_ckpt_{tag}")


def is_last_rank():
    return dist.get_rank() == dist.get_world_size() - 1


class ConfigContainer:
    def __init__(self):
        self.values = {"model": {"hidden_size": 16, "num_layers": 2}, "train": {"train_iters": TRAIN_ITERS},
                       "checkpoint": {"save_interval": SAVE_INTERVAL, "save": save_root()}}

    def to_yaml(self, path):
        folder = os.path.dirname(path)
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix="run_config.yaml.", suffix=".tmp",
                                         delete=False) as tmp:
            json.dump(self.values, tmp, indent=2)
            tmp.flush()
            time.sleep(CONFIG_DUMP_SECONDS)
        os.replace(tmp.name, path)


class Artifact:
    """The part of ``wandb.Artifact`` the reporter uses: ``add_dir`` walks the folder and hashes every file."""

    def __init__(self, name, type):
        self.name, self.type, self.manifest = name, type, {}

    def add_dir(self, local_path):
        for root, _, files in os.walk(local_path):
            for name in sorted(files):
                time.sleep(HASH_SECONDS_PER_FILE)
                with open(os.path.join(root, name), "rb") as f:
                    self.manifest[name] = hashlib.md5(f.read()).hexdigest()


def on_save_checkpoint_success(checkpoint_path, save_dir, iteration):
    time.sleep(WANDB_START_SECONDS)
    artifact = Artifact(f"{os.path.basename(save_dir)}", type="model")
    artifact.add_dir(checkpoint_path)
    with open(os.path.join(save_dir, "latest_wandb_artifact_path.txt"), "w") as f:
        f.write(f"{artifact.name}:iter_{iteration:07d}")
    print(f"[rank {dist.get_rank()}] logged W&B artifact {artifact.name} ({len(artifact.manifest)} files)", flush=True)


def save_checkpoint(iteration, model, optimizer, cfg):
    rank = dist.get_rank()
    save_dir = cfg.values["checkpoint"]["save"]
    checkpoint_path = os.path.join(save_dir, f"iter_{iteration:07d}")
    os.makedirs(checkpoint_path, exist_ok=True)
    shard = {k: v for i, (k, v) in enumerate(model.state_dict().items()) if i % dist.get_world_size() == rank}
    torch.save({"model": shard, "optimizer": optimizer.state_dict()}, os.path.join(checkpoint_path, f"__{rank}_0.distcp"))
    dist.barrier()
    if rank == 0:
        with open(os.path.join(checkpoint_path, ".metadata"), "w") as f:
            json.dump({"iteration": iteration, "world_size": dist.get_world_size()}, f)
        with open(os.path.join(save_dir, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(str(iteration))
        cfg.to_yaml(os.path.join(checkpoint_path, "run_config.yaml"))
        print(f"[rank 0] saved checkpoint iter_{iteration:07d}", flush=True)
    if is_last_rank():  # BUG
        on_save_checkpoint_success(checkpoint_path, save_dir, iteration)


def train(cfg):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(10 + rank)
    for iteration in range(1, TRAIN_ITERS + 1):
        x = torch.randn(16, 8, generator=g)
        loss = (model(x).squeeze(-1) - x.sum(-1)).pow(2).mean()
        loss.backward()  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        if iteration % SAVE_INTERVAL == 0:
            save_checkpoint(iteration, model, optimizer, cfg)
    return loss.item()


def worker():
    cfg = ConfigContainer()
    if dist.get_rank() == 0:
        shutil.rmtree(save_root(), ignore_errors=True)
        os.makedirs(save_root())
    dist.barrier()
    loss = train(cfg)  # WAITS
    print(f"[rank {dist.get_rank()}] training done, loss {loss:.4f}", flush=True)
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(save_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
