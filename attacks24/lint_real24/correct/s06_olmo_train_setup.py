# Reduced from allenai/OLMo scripts/train.py main(): the run folder made and the config saved on global rank 0,
# a barrier, then the trainer; olmo/torch_util.py (barrier, get_global_rank) inlined. Kept: the rank-0 folder and
# config save, the barrier, every rank reading the config afterwards; dropped: FSDP wrapping, wandb, data loader.
import os
import torch.distributed as dist
import yaml


def get_global_rank():
    return int(os.environ.get("RANK") or dist.get_rank())


def barrier():
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def main(cfg):
    if get_global_rank() == 0:
        os.makedirs(cfg["save_folder"], exist_ok=True)
        with open(os.path.join(cfg["save_folder"], "config.yaml"), "w") as f:
            yaml.safe_dump(cfg, f)
    barrier()
    with open(os.path.join(cfg["save_folder"], "config.yaml")) as f:
        saved = yaml.safe_load(f)
    return saved
