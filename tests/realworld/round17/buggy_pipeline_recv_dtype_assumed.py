"""A two-stage pipeline under bf16 autocast: stage 0 sends its fp32 residual stream, stage 1 receives into bf16.

Models: Megatron-LM ``core/pipeline_parallel/p2p_communication.py`` (``_communicate`` allocates every receive buffer
with ``torch.empty(tensor_shape, dtype=config.pipeline_dtype)``: the wire dtype is a contract between the stages,
and Megatron's older ``_communicate`` picks ``torch.float`` when ``fp32_residual_connection`` is set, because the
residual stream is then fp32 whatever the compute dtype is); the CPU autocast rule that ``x + f(x)`` with an fp32
``x`` and a bf16 ``f(x)`` promotes to fp32. The script is a learner's hand-written GPipe-style pipeline (one
micro-batch in flight, blocking ``send``/``recv``) that runs its blocks under ``torch.autocast("cpu", bfloat16)``
and sets ``pipeline_dtype = torch.bfloat16`` "because autocast computes in bf16".

What it does: 2 ranks, rank 0 = stage 0 (embedding + one pre-norm residual MLP block), rank 1 = stage 1 (norm +
LM head + loss). For each of 4 micro-batches stage 0 sends its output activations to stage 1, stage 1 runs forward
and backward and sends the gradient of its input back, stage 0 runs its backward; then each stage steps its own
optimizer.

The bug: stage 0 sends ``h`` as it comes out of the residual add. The embedding output is fp32 and the MLP branch
bf16, so ``h`` is fp32 (4 bytes an element); stage 1 receives into a ``pipeline_dtype`` (bf16, 2 bytes) buffer of
the same shape. gloo gets twice as many bytes as the receive buffer holds and rank 1 aborts in ``recv``; rank 0,
waiting in ``recv`` for the gradient, loses its peer. The correct twin casts to ``pipeline_dtype`` before sending.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class Config:
    vocab = 64
    hidden = 32
    seq = 16
    micro_batch = 4
    micro_batches = 4
    steps = 3
    pipeline_dtype = torch.bfloat16  # "autocast computes in bf16, so that is what goes over the wire"


class Stage0(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden)
        self.fc1 = nn.Linear(cfg.hidden, 4 * cfg.hidden)
        self.fc2 = nn.Linear(4 * cfg.hidden, cfg.hidden)

    def forward(self, tokens):
        x = self.embed(tokens)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return x + self.fc2(F.gelu(self.fc1(self.norm(x))))  # residual stream stays fp32


class Stage1(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.hidden)
        self.head = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, h):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.head(self.norm(h))


def micro_batches(cfg, step):
    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, cfg.vocab, (cfg.micro_batches, cfg.micro_batch, cfg.seq + 1), generator=g)
    return [(t[:, :-1], t[:, 1:]) for t in tokens]


def run_stage0(cfg, model, opt, step):
    opt.zero_grad()
    for tokens, _ in micro_batches(cfg, step):
        h = model(tokens)
        dist.send(h.detach(), dst=1)  # BUG
        grad = torch.empty(h.shape, dtype=cfg.pipeline_dtype)
        dist.recv(grad, src=1)  # WAITS
        h.backward(grad.to(h.dtype))
    opt.step()


def run_stage1(cfg, model, opt, step):
    opt.zero_grad()
    losses = []
    shape = (cfg.micro_batch, cfg.seq, cfg.hidden)
    for _, labels in micro_batches(cfg, step):
        h = torch.empty(shape, dtype=cfg.pipeline_dtype)
        dist.recv(h, src=0)  # WAITS
        h.requires_grad_(True)
        logits = model(h)
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab), labels.reshape(-1)) / cfg.micro_batches
        loss.backward()
        dist.send(h.grad.to(cfg.pipeline_dtype).contiguous(), dst=0)
        losses.append(loss.item())
    opt.step()
    return sum(losses)


def worker():
    rank = dist.get_rank()
    cfg = Config()
    torch.manual_seed(rank)
    model = Stage0(cfg) if rank == 0 else Stage1(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(cfg.steps):
        if rank == 0:
            run_stage0(cfg, model, opt, step)  # WAITS
        else:
            loss = run_stage1(cfg, model, opt, step)  # WAITS
            print(f"step {step}: loss {loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
