"""Megatron Bridge's functional test under torchrun: pretrain, save, then finetune from the checkpoint, in rank 0's
``tmp_path`` shared with every rank.

Models: NVIDIA-NeMo/Megatron-Bridge PR #228 ("Add functional tests for train + resume + finetuning from ckpt":
"``tmp_path`` will be different across processes when launched with torchrun/torch distributed run. this PR adds
utils for synchronizing the paths before the training begins to avoid hangs when loading checkpoints"). Code
modelled (written here, not copied): the functional tests' pretrain -> save -> finetune flow (pytest's per-process
``tmp_path``, the checkpoint folder under it in ``CheckpointConfig.save`` and then ``load``),
``src/megatron/bridge/training/checkpointing.py`` (``save_checkpoint``: every rank writes its shard, rank 0 writes
``latest_checkpointed_iteration.txt``, a barrier; ``load_checkpoint``: no tracker file -> "could not find
checkpoint, starting from scratch" and iteration 0; otherwise the rank's shard is read and the common state is
broadcast from rank 0).

The fix modelled is the PR's: before training, the test synchronises the path -- rank 0's ``tmp_path`` is broadcast
(``broadcast_object_list``) and every rank builds its checkpoint folder from it. 2 ranks; both save their shards into
one folder, both find the tracker, load iteration 4 and finetune to iteration 7.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

PRETRAIN_ITERS = 4
FINETUNE_ITERS = 3
TRACKER = "latest_checkpointed_iteration.txt"


class CheckpointConfig:
    def __init__(self, save=None, load=None):
        self.save, self.load = save, load


def save_checkpoint(iteration, model, ckpt_cfg):
    rank = dist.get_rank()
    folder = os.path.join(ckpt_cfg.save, f"iter_{iteration:07d}")
    os.makedirs(folder, exist_ok=True)
    shard = {k: v for i, (k, v) in enumerate(model.module.state_dict().items()) if i % dist.get_world_size() == rank}
    torch.save(shard, os.path.join(folder, f"__{rank}_0.distcp"))
    if rank == 0:
        torch.save({"iteration": iteration, "args": {"hidden": 16}}, os.path.join(folder, "common.pt"))
        with open(os.path.join(ckpt_cfg.save, TRACKER), "w") as f:
            f.write(str(iteration))
    dist.barrier()


def load_checkpoint(model, ckpt_cfg):
    rank = dist.get_rank()
    tracker = os.path.join(ckpt_cfg.load, TRACKER)
    if not os.path.isfile(tracker):
        print(f"[rank {rank}] WARNING: could not find the metadata file {tracker}; starting from scratch", flush=True)
        return 0
    with open(tracker) as f:
        iteration = int(f.read())
    folder = os.path.join(ckpt_cfg.load, f"iter_{iteration:07d}")
    common = [torch.load(os.path.join(folder, "common.pt"))] if rank == 0 else [None]
    dist.broadcast_object_list(common, src=0)
    shard = torch.load(os.path.join(folder, f"__{rank}_0.distcp"))
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, shard)
    model.module.load_state_dict({k: v for part in gathered for k, v in part.items()})
    print(f"[rank {rank}] loaded checkpoint iteration {common[0]['iteration']}", flush=True)
    return common[0]["iteration"]


def build_model():
    torch.manual_seed(0)
    return DDP(nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)))


def train_steps(model, start, stop, salt):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 * salt + dist.get_rank())
    for _ in range(start, stop):
        x = torch.randn(8, 6, generator=g)
        loss = (model(x).squeeze(-1) - x[:, 0]).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def pretrain(ckpt_cfg):
    model = build_model()
    loss = train_steps(model, 0, PRETRAIN_ITERS, salt=1)
    save_checkpoint(PRETRAIN_ITERS, model, ckpt_cfg)
    print(f"[rank {dist.get_rank()}] pretrain done, loss {loss:.4f}", flush=True)


def finetune(ckpt_cfg):
    model = build_model()
    start = load_checkpoint(model, ckpt_cfg)
    loss = train_steps(model, start, start + FINETUNE_ITERS, salt=2)
    print(f"[rank {dist.get_rank()}] finetune from iteration {start} done, loss {loss:.4f}", flush=True)


def synchronize_tmp_path(tmp_path):
    shared = [tmp_path]
    dist.broadcast_object_list(shared, src=0)
    return shared[0]


def test_pretrain_then_finetune(tmp_path):
    checkpoint_dir = os.path.join(synchronize_tmp_path(tmp_path), "checkpoints")
    pretrain(CheckpointConfig(save=checkpoint_dir))
    finetune(CheckpointConfig(load=checkpoint_dir))


def worker():
    tmp_path = tempfile.mkdtemp(prefix=f"r32_pytest_rank{dist.get_rank()}_")
    try:
        test_pretrain_then_finetune(tmp_path)
        dist.barrier()
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
