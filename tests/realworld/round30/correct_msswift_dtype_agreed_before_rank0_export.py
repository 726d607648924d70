"""ms-swift's end of training with ``--save_safetensors true``, the config's collective made by every rank
before rank 0 exports alone.

Models: modelscope/ms-swift issue #9188 (rank 0 hung writing the config after its lone safetensors export,
because that step needs distributed communication and the other ranks had already exited). Here the step that
talks to the other ranks -- agreeing on the model's ``torch_dtype`` across the expert-parallel ranks -- runs on
every rank before the export; rank 0 then writes the shards and a config that needs nobody, and every rank waits
in a final barrier before leaving. Code modelled (written here, not copied): the Megatron SFT trainer's end of
``train``, the HF export (``save_safetensors`` shard by shard, the config with its ``torch_dtype``), an
expert-parallel MoE.

2 ranks, each holding one expert, 3 training steps, 8 shards written by rank 0 at 0.15 s each.
"""

import datetime
import json
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

N_SHARDS = 8
DTYPE_CODES = {torch.float32: 0, torch.bfloat16: 1}


def out_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r30_msswift_{tag}")


class ExpertParallelMoE(nn.Module):
    """One shared attention-ish layer (replicated) and this rank's expert."""

    def __init__(self, rank):
        super().__init__()
        torch.manual_seed(0)
        self.shared = nn.Linear(8, 8)
        torch.manual_seed(100 + rank)
        self.expert = nn.Linear(8, 8)

    def forward(self, x):
        return self.expert(torch.relu(self.shared(x)))


def train(model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(dist.get_rank())
    for _ in range(steps):
        x = torch.randn(16, 8, generator=g)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.shared.parameters():  # the replicated part is data-parallel
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        opt.step()
    return loss.item()


def resolve_model_dtype(model):
    # every expert-parallel rank reports the dtype of the experts it holds; the config records the widest
    code = torch.tensor([max(DTYPE_CODES[p.dtype] for p in model.parameters())])
    dist.all_reduce(code, op=dist.ReduceOp.MAX)
    return {v: k for k, v in DTYPE_CODES.items()}[int(code.item())]


def save_safetensors(model, path):
    state = model.state_dict()
    keys = sorted(state)
    for i in range(N_SHARDS):
        part = {k: state[k] for k in keys[i::N_SHARDS]}
        torch.save(part, os.path.join(path, f"model-{i + 1:05d}-of-{N_SHARDS:05d}.safetensors"))
        time.sleep(0.15)  # stand-in: the shards are written one after another


def save_config(dtype, path):
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model_type": "toy_moe", "torch_dtype": str(dtype).replace("torch.", "")}, f)


def finish_training(model):
    dtype = resolve_model_dtype(model)  # every rank, while all of them are still here
    if dist.get_rank() == 0:
        path = os.path.join(out_dir(), "checkpoint-3")
        os.makedirs(path, exist_ok=True)
        save_safetensors(model, path)
        save_config(dtype, path)
        print(f"exported {sorted(os.listdir(path))}", flush=True)
        shutil.rmtree(out_dir(), ignore_errors=True)
    dist.barrier()


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(out_dir(), ignore_errors=True)
    model = ExpertParallelMoE(rank)
    loss = train(model)
    print(f"[rank {rank}] training done, loss {loss:.4f}", flush=True)
    finish_training(model)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
