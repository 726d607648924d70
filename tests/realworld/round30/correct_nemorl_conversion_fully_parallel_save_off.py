"""NeMo RL's HF-to-Megatron conversion with ``fully_parallel_save=False``, in a world that also holds the vLLM
workers.

Models: NVIDIA-NeMo/RL issue #2225 and PR #2226 (pass ``fully_parallel_save=False`` to
``bridge.save_megatron_model()`` during the conversion), NVIDIA-NeMo/Megatron-Bridge PR #3207 (the parameter
exposed): without the fully parallel wrapper the save makes no ``all_gather_object`` on the data-parallel group
that, built from the whole world, contains the inference workers. Code modelled (written here, not copied):
``community_import.py``, Megatron-Bridge ``save_megatron_model`` / ``CheckpointConfig``.

3 ranks: 0 and 1 train (each writes its own shard, then a barrier on the training-only group), 2 is a
non-colocated vLLM worker that waits for the refit broadcast from rank 0, which every rank makes.
"""

import datetime
import os
import shutil
import tempfile
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

TRAIN_RANKS = [0, 1]
INFERENCE_RANK = 2


def ckpt_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r30_nemorl_{tag}")


def initialize_model_parallel():
    # TP = PP = 1: the data-parallel group is every rank of the world it was built from
    return {"dp": dist.group.WORLD, "train": dist.new_group(TRAIN_RANKS)}


@dataclass
class CheckpointConfig:
    save: str
    fully_parallel_save: bool = True


def save_megatron_model(model, groups, cfg):
    rank = dist.get_rank()
    shard = {k: v for i, (k, v) in enumerate(model.state_dict().items()) if i % len(TRAIN_RANKS) == rank}
    if cfg.fully_parallel_save:
        # FullyParallelSaveStrategyWrapper: agree on a balanced write plan across the DP group
        sizes = [None] * dist.get_world_size(groups["dp"])
        dist.all_gather_object(sizes, sum(t.numel() for t in shard.values()), group=groups["dp"])
        print(f"[rank {rank}] write plan {sizes}", flush=True)
    os.makedirs(cfg.save, exist_ok=True)
    torch.save(shard, os.path.join(cfg.save, f"shard_{rank}.pt"))
    dist.barrier(group=groups["train"])
    if rank == 0:
        print(f"saved megatron checkpoint to {cfg.save}", flush=True)


def import_model_from_hf(groups):
    torch.manual_seed(0)
    hf_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))  # stands in for the HF weights
    save_megatron_model(hf_model, groups, CheckpointConfig(save=os.path.join(ckpt_root(), "iter_0000000"), fully_parallel_save=False))
    return hf_model


def refit_inference_weights(flat):
    dist.broadcast(flat, src=0)
    return flat


def worker():
    rank = dist.get_rank()
    groups = initialize_model_parallel()
    n_params = 8 * 16 + 16 + 16 * 4 + 4
    if rank in TRAIN_RANKS:
        if rank == 0:
            shutil.rmtree(ckpt_root(), ignore_errors=True)
        dist.barrier(group=groups["train"])
        model = import_model_from_hf(groups)
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    else:
        flat = torch.empty(n_params)
    flat = refit_inference_weights(flat)
    if rank == INFERENCE_RANK:
        print(f"[vllm] refit {flat.numel()} weights, checksum {flat.sum().item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(ckpt_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
