"""nanoGPT-style training whose ``get_batch`` re-opens ``train.bin`` each step; rank 0 removes it after the last step.

Models: karpathy/nanoGPT ``train.py`` ``get_batch`` ("We recreate np.memmap every batch to avoid a memory leak",
copied into many public repos, e.g. urlicht/nanogpt ``src/nanogpt/data/batch.py``) and ``data/*/prepare.py`` (the
token ids written once as a uint16 file); the ``dist.barrier()`` after rank-0 data preparation of the PyTorch DDP
tutorials. The script is a learner's DDP version of nanoGPT's character-level training that prepares the token
file itself on rank 0 in a scratch directory.

What it does: 2 ranks. Rank 0 makes a scratch directory (``tempfile.mkdtemp``), broadcasts its path, tokenises a
built-in text into ``train.bin`` and keeps its own token array in memory; after a barrier the other rank
memory-maps the file to count the tokens; a second barrier. A tiny language model is trained for 6 steps under DDP:
rank 0 samples from its in-memory array, the others through ``get_batch``, which re-opens the file every step.

Why it is correct: the scratch directory is removed by rank 0 only after the last step and a final barrier, when
no rank opens ``train.bin`` any more (and in a ``finally`` if the run fails).
"""
import datetime
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TEXT = ("First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. First Citizen: You are all "
        "resolved rather to die than to famish? All: Resolved. resolved. First Citizen: First, you know Caius "
        "Marcius is chief enemy to the people. ") * 8
BLOCK, BATCH, STEPS = 16, 8, 6


def prepare(data_dir):
    """nanoGPT's shakespeare_char prepare.py, shortened: characters to ids, ids to a uint16 file."""
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in TEXT], dtype=np.uint16)
    ids.tofile(os.path.join(data_dir, "train.bin"))
    return ids, len(chars)


def get_batch(data_dir, gen):
    # nanoGPT: recreate np.memmap every batch to avoid a memory leak
    data = np.memmap(os.path.join(data_dir, "train.bin"), dtype=np.uint16, mode="r")
    return sample(data, gen)


def sample(data, gen):
    ix = torch.randint(len(data) - BLOCK - 1, (BATCH,), generator=gen)
    x = torch.stack([torch.from_numpy(data[i:i + BLOCK].astype(np.int64)) for i in ix.tolist()])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + BLOCK].astype(np.int64)) for i in ix.tolist()])
    return x, y


class TinyLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, vocab))

    def forward(self, x):
        return self.mlp(self.emb(x))


def worker():
    rank = dist.get_rank()
    holder = [tempfile.mkdtemp(prefix="r17_nanogpt_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    data_dir = holder[0]
    try:
        tokens = vocab_size = None
        if rank == 0:
            tokens, vocab_size = prepare(data_dir)
        dist.barrier()  # the file is written
        if rank != 0:
            n_tokens = len(np.memmap(os.path.join(data_dir, "train.bin"), dtype=np.uint16, mode="r"))
            print(f"[rank {rank}] {n_tokens} tokens in train.bin", flush=True)
        sizes = [vocab_size]
        dist.broadcast_object_list(sizes, src=0)
        vocab_size = sizes[0]
        dist.barrier()  # every rank has opened the data (get_batch still re-opens it at every step)

        torch.manual_seed(0)
        model = DDP(TinyLM(vocab_size))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        gen = torch.Generator().manual_seed(100 + rank)
        for step in range(STEPS):
            x, y = sample(tokens, gen) if rank == 0 else get_batch(data_dir, gen)
            loss = F.cross_entropy(model(x).reshape(-1, vocab_size), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0:
                print(f"step {step}: loss {loss.item():.3f}", flush=True)
        dist.barrier()  # no rank reads train.bin any more
    finally:
        if rank == 0:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
