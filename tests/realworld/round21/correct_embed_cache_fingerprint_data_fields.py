"""Precomputed-embedding cache whose fingerprint hashes the data fields only (correct).

Models: huggingface/diffusers ``examples/controlnet/train_controlnet_sdxl.py`` (PR #4038 / PR #4188): inside
``accelerator.main_process_first()`` the prompt embeddings are mapped with ``new_fingerprint = Hasher.hash(args)``
"used by the cache for the other processes to load the result"; the same scripts parse ``--local_rank`` and then
overwrite it with ``LOCAL_RANK`` from the environment. huggingface/datasets issue #6060 (the map ran again on the
other process) and issue #7261 (the cache was not found again).

The main process loads the (expensive) text encoder, encodes every prompt and saves the result under a name made
from a fingerprint; after ``main_process_first``'s barrier the other ranks open the file of that name instead of
loading an encoder of their own. The fingerprint hashes only the fields that decide the embeddings (the dataset
name, prompt length and encoder seed), so it is the same on every rank. Then a small DDP model trains on the
cached embeddings. The cache lives in a temp dir whose name rank 0 broadcasts; rank 0 removes it at the end.
"""
import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

N_PROMPTS, PROMPT_LEN, EMB = 16, 6, 8


@dataclass
class Args:
    dataset_name: str = "toy-captions"
    max_prompt_length: int = PROMPT_LEN
    encoder_seed: int = 0
    learning_rate: float = 0.05
    local_rank: int = -1
    cache_dir: str = ""


def parse_args(cache_dir):
    args = Args(cache_dir=cache_dir)
    env_local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    if env_local_rank != args.local_rank:
        args.local_rank = env_local_rank
    return args


def fingerprint(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


@contextmanager
def main_process_first(is_main):
    if not is_main:
        dist.barrier()
    try:
        yield
    finally:
        if is_main:
            dist.barrier()


def encode_prompts(args):
    torch.manual_seed(args.encoder_seed)
    encoder = nn.EmbeddingBag(50, EMB)  # the text encoder only the main process loads
    g = torch.Generator().manual_seed(1)
    prompts = torch.randint(0, 50, (N_PROMPTS, args.max_prompt_length), generator=g)
    with torch.no_grad():
        return {"embeds": encoder(prompts), "targets": torch.randn(N_PROMPTS, 1, generator=g)}


def cache_fingerprint(args):
    return fingerprint([args.dataset_name, args.max_prompt_length, args.encoder_seed])


def precompute_embeddings(args, is_main):
    path = os.path.join(args.cache_dir, f"embeds-{cache_fingerprint(args)}.pt")
    with main_process_first(is_main):
        if is_main and not os.path.exists(path):
            torch.save(encode_prompts(args), path)
        cached = torch.load(path)
    return cached


def train(args, data):
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(EMB, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    x, y = data["embeds"][rank::world], data["targets"][rank::world]
    for step in range(6):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 2 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    names = [tempfile.mkdtemp(prefix="r21_embeds_") if rank == 0 else None]
    dist.broadcast_object_list(names, src=0)
    try:
        args = parse_args(names[0])
        data = precompute_embeddings(args, is_main=rank == 0)
        train(args, data)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(names[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
