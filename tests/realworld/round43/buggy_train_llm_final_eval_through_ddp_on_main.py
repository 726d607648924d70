"""train-llm-from-scratch: the final dev evaluation runs on the main rank only, through the DDP-wrapped model, after
the other ranks have gone to cleanup.

Source: FareedKhan-dev/train-llm-from-scratch PR #32, "fix: multi-GPU (DDP) training hangs in SFT, Reward, DPO" (June
2026): "After the training loop, the final evaluation runs only on rank 0 (`if ctx.is_main:`) but called the
DDP-wrapped model's forward. That launches an NCCL collective with no peer (the other ranks have already reached
`cleanup()`), so rank 0 waits out the 600s NCCL watchdog, aborts with SIGABRT, and leaves a 0-byte checkpoint. ... Fix:
run the final eval on `unwrap(model)`. The periodic eval already runs on all ranks." Modelled on `scripts/train_sft.py`
`main` / `eval_dev` and `src/post_training/distributed.py` (`ddp_wrap`, `reduce_scalar`, `cleanup`); the model keeps
its causal mask as a registered buffer, as the repository's attention modules do.

What it does: two ranks fine-tune a tiny causal language model under DDP on packed token rows (each rank its own
shard), with a periodic dev evaluation that every rank runs and `reduce_scalar` averages. After the loop the main rank
evaluates once more and saves the checkpoint; every rank then cleans up.

The bug: the final `eval_dev` on the main rank is given the DDP-wrapped model. DDP's forward first broadcasts the
module buffers from rank 0 (the last forward before it was a training forward, so the buffer sync is due); rank 1 has
left for cleanup and the broadcast never completes: rank 0 fails when rank 1's process group goes away (NCCL would
wait out its watchdog).
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, CTX, DIM = 32, 8, 16


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.register_buffer("causal_mask", torch.tril(torch.ones(CTX, CTX)).view(1, CTX, CTX))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = (q @ k.transpose(1, 2)) / DIM ** 0.5
        att = att.masked_fill(self.causal_mask[:, :t, :t] == 0, float("-inf"))
        return self.proj(F.softmax(att, dim=-1) @ v)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(CTX, DIM)
        self.attn = CausalSelfAttention()
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        x = x + self.attn(x)
        return self.head(x)


def unwrap(model):
    return model.module if isinstance(model, DDP) else model


def sft_loss(logits, tokens):
    return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def reduce_scalar(value, world_size):
    t = torch.tensor([value])
    dist.all_reduce(t)
    return (t / world_size).item()


@torch.no_grad()
def eval_dev(model, dev_rows):
    model.eval()
    total = 0.0
    for tokens in dev_rows:
        total += sft_loss(model(tokens), tokens).item()  # WAITS
    model.train()
    return total / len(dev_rows)


def packed_rows(seed, n):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    return [((start[i] + torch.arange(CTX)) % VOCAB).view(1, CTX) for i in range(n)]


def train(model, optimizer, train_rows, dev_rows, world_size, is_main, eval_steps=3):
    model.train()
    for step, tokens in enumerate(train_rows):
        optimizer.zero_grad(set_to_none=True)
        loss = sft_loss(model(tokens), tokens)
        loss.backward()
        optimizer.step()
        if step > 0 and step % eval_steps == 0:
            dev = reduce_scalar(eval_dev(model, dev_rows), world_size)  # periodic eval: every rank
            if is_main:
                print(f"  [eval] step {step} | dev_loss {dev:.4f}", flush=True)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    is_main = rank == 0
    torch.manual_seed(0)
    model = DDP(TinyLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    train_rows = packed_rows(10 + rank, 8)
    dev_rows = packed_rows(99 + rank, 2)
    out_dir = [tempfile.mkdtemp(prefix="sft_ckpt_") if is_main else None]
    dist.broadcast_object_list(out_dir, src=0)
    train(model, optimizer, train_rows, dev_rows, world_size, is_main)
    if is_main:
        try:
            dev = eval_dev(model, dev_rows)  # BUG # WAITS
            path = os.path.join(out_dir[0], "sft.pt")
            torch.save({"model": unwrap(model).state_dict(), "dev_loss": dev}, path)
            print(f"Done SFT. dev_loss {dev:.4f} -> {path} ({os.path.getsize(path)} bytes)", flush=True)
        finally:
            shutil.rmtree(out_dir[0], ignore_errors=True)
    print(f"[rank {rank}] cleanup", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
