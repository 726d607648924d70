"""Rank 0 samples under ``torch.inference_mode()``; the rotary cache is rebuilt when training meets inference tensors.

Models: Dao-AILab/flash-attention PR #299 ("rotary: update cos/sin cache when switching from inference mode") and
``flash_attn/layers/rotary.py`` ``RotaryEmbedding._update_cos_sin_cache``, whose condition also rebuilds the tables
when the module is training and the cached ones are inference tensors; the training script is a learner's DDP loop
that lets rank 0 print a generated sample after each epoch (nanoGPT-style).

What it does: a two-layer causal LM with rotary attention trains under DDP on 2 ranks (8-token sequences). After
each epoch, rank 0 alone generates 12 tokens with the unwrapped module inside ``@torch.inference_mode()`` (16
positions: the cache grows and its tables are inference tensors); rank 1 goes straight on. In rank 0's next training
forward the cache sees ``self.training`` and an inference tensor and rebuilds the tables outside inference mode, so
autograd can save them; both ranks meet in every gradient all-reduce, and a final barrier ends the run.
"""
import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 24
SEQ = 8
DIM = 32
HEADS = 2


def rotate_half_apply(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._seq_len_cached = 0
        self._cos_cached = None
        self._sin_cached = None

    def _update_cos_sin_cache(self, seqlen):
        if (
            seqlen > self._seq_len_cached
            or self._cos_cached is None
            or (self.training and self._cos_cached.is_inference())
        ):
            t = torch.arange(seqlen, dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            self._cos_cached = torch.cos(freqs)
            self._sin_cached = torch.sin(freqs)
            self._seq_len_cached = seqlen

    def forward(self, q, k):
        seqlen = q.shape[-2]
        self._update_cos_sin_cache(seqlen)
        cos = self._cos_cached[:seqlen]
        sin = self._sin_cached[:seqlen]
        return rotate_half_apply(q, cos, sin), rotate_half_apply(k, cos, sin)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.rotary = RotaryEmbedding(DIM // HEADS)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(DIM, dim=-1)
        q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2) for z in (q, k, v))
        q, k = self.rotary(q, k)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        x = self.emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_dataset():
    g = torch.Generator().manual_seed(0)
    starts = torch.randint(0, VOCAB, (64, 1), generator=g)
    seqs = (starts + torch.arange(SEQ + 1)) % VOCAB  # "count upwards" sequences
    return TensorDataset(seqs[:, :-1], seqs[:, 1:])


@torch.inference_mode()
def generate(model, prompt, new_tokens):
    model.eval()
    idx = prompt
    for _ in range(new_tokens):
        logits = model(idx)
        idx = torch.cat([idx, logits[:, -1:].argmax(-1)], dim=1)
    model.train()
    return idx


def train_one_epoch(ddp_model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        logits = ddp_model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / max(1, len(loader))


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyLM()
    ddp_model = DDP(model)
    dataset = make_dataset()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=3e-3)

    for epoch in range(3):
        sampler.set_epoch(epoch)
        avg = train_one_epoch(ddp_model, loader, optimizer)
        if rank == 0:
            sample = generate(ddp_model.module, torch.tensor([[3, 4, 5, 6]]), new_tokens=12)
            print(f"epoch {epoch} loss {avg:.3f} sample {sample[0].tolist()}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
