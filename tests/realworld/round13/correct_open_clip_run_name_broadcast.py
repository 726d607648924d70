"""An experiment name built from a timestamp, the master's timestamp broadcast to every rank before it is used.

Modelled on mlfoundations/open_clip ``src/open_clip_train/main.py`` (``date_str = datetime.now().strftime(
"%Y_%m_%d-%H_%M_%S")``; ``if args.distributed: date_str = broadcast_object(args, date_str)`` with the comment
"sync date_str from master to all ranks"; ``args.name``, ``log_base_path`` and ``args.checkpoint_path`` built from
it on every rank) and ``src/open_clip_train/distributed.py`` ``broadcast_object`` (``broadcast_object_list`` of a
one-element list from rank 0); per-process RNG state saved by every rank next to the master's checkpoint as
transformers' ``Trainer._save_rng_state`` does (``rng_state_{process_index}.pth``).

Each rank reads its own clock, rank 1 more than a second after rank 0 (``init_distributed_device``'s stand-in:
the second node's device setup takes 1.2 s longer), so the local timestamps differ; ``broadcast_object``
replaces them with rank 0's before the name is built. At the end of every epoch each rank writes its RNG state
into the one ``checkpoint_path``, rank 0 writes the model, and after the barrier rank 0 reads every rank's file
for the manifest. What looks suspicious and is right: a wall-clock value computed on every rank at different
moments and used for paths, and rank 0 reading files the other ranks wrote (after a barrier).
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MODEL = "toy/ViT-T-4"
LR = 0.05
BATCH_SIZE = 4
EPOCHS = 2


def logs_root():
    return os.path.join(tempfile.gettempdir(), f"r13_openclip_logs_{os.environ.get('MASTER_PORT', 'local')}")


def init_distributed_device(rank):
    # stand-in for the cluster: the second node's device setup is 1.2 s slower
    if rank != 0:
        time.sleep(1.2)
    return torch.device("cpu")


def broadcast_object(obj, src=0):
    objects = [obj if dist.get_rank() == src else None]
    dist.broadcast_object_list(objects, src=src)
    return objects[0]


def experiment_name():
    model_name_safe = MODEL.replace("/", "-")
    date_str = datetime.datetime.now().strftime("%Y_%m_%d-%H_%M_%S")
    date_str = broadcast_object(date_str)  # sync date_str from master to all ranks
    return "-".join([date_str, f"model_{model_name_safe}", f"lr_{LR}", f"b_{BATCH_SIZE}", "j_0", "p_fp32"])


def save_checkpoint(model, checkpoint_path, epoch, rank, world):
    torch.save({"python_rng": None, "cpu": torch.get_rng_state()},
               os.path.join(checkpoint_path, f"rng_state_{rank}.pth"))
    if rank == 0:
        torch.save({"epoch": epoch, "state_dict": model.state_dict()},
                   os.path.join(checkpoint_path, f"epoch_{epoch}.pt"))
    dist.barrier()
    if rank == 0:
        manifest = {"epoch": epoch, "rng_states": []}
        for other in range(world):
            state = torch.load(os.path.join(checkpoint_path, f"rng_state_{other}.pth"))
            manifest["rng_states"].append(state["cpu"].shape[0])
        torch.save(manifest, os.path.join(checkpoint_path, "manifest.pt"))
        print(f"epoch {epoch}: checkpoint complete in {checkpoint_path}", flush=True)


def train_one_epoch(model, optimizer, batches):
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    init_distributed_device(rank)
    name = experiment_name()
    checkpoint_path = os.path.join(logs_root(), name, "checkpoints")
    os.makedirs(checkpoint_path, exist_ok=True)
    print(f"rank {rank}: experiment {name}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    generator = torch.Generator().manual_seed(10 + rank)
    batches = [(torch.randn(BATCH_SIZE, 8, generator=generator), torch.randint(0, 3, (BATCH_SIZE,), generator=generator))
               for _ in range(3)]
    try:
        for epoch in range(1, EPOCHS + 1):
            train_one_epoch(model, optimizer, batches)
            save_checkpoint(model, checkpoint_path, epoch, rank, world)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(logs_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
