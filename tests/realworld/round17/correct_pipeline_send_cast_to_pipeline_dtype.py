"""A two-stage pipeline under bf16 autocast whose stages agree on the wire dtype: stage 0 casts before it sends.

Models: Megatron-LM ``core/pipeline_parallel/p2p_communication.py`` (``_communicate`` allocates every receive buffer
with ``torch.empty(tensor_shape, dtype=config.pipeline_dtype)``, so what a stage sends must be ``pipeline_dtype``;
the older ``_communicate`` uses ``torch.float`` when ``fp32_residual_connection`` keeps the residual stream in
fp32); the CPU autocast rule that ``x + f(x)`` with an fp32 ``x`` and a bf16 ``f(x)`` is fp32. The script is a
learner's hand-written GPipe-style pipeline (one micro-batch in flight, blocking ``send``/``recv``) that runs its
blocks under ``torch.autocast("cpu", bfloat16)`` with ``pipeline_dtype = torch.bfloat16``.

What it does: 2 ranks, rank 0 = stage 0 (embedding + one pre-norm residual MLP block), rank 1 = stage 1 (norm + LM
head + loss). For each of 4 micro-batches stage 0 sends its output activations, stage 1 runs forward and backward
and sends back the gradient of its input, stage 0 runs its backward; then each stage steps its own optimizer;
3 steps and a barrier.

Why it is correct: the residual add makes stage 0's output fp32, and stage 0 sends ``h.to(pipeline_dtype)``, so
both directions carry bf16 tensors of the shape the receiver allocates (gradients are cast back to ``h``'s dtype
before stage 0's backward). Every ``send`` has its ``recv`` with the same byte count.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
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
        dist.send(h.detach().to(cfg.pipeline_dtype), dst=1)  # the wire carries pipeline_dtype
        grad = torch.empty(h.shape, dtype=cfg.pipeline_dtype)
        dist.recv(grad, src=1)
        h.backward(grad.to(h.dtype))
    opt.step()


def run_stage1(cfg, model, opt, step):
    opt.zero_grad()
    losses = []
    shape = (cfg.micro_batch, cfg.seq, cfg.hidden)
    for _, labels in micro_batches(cfg, step):
        h = torch.empty(shape, dtype=cfg.pipeline_dtype)
        dist.recv(h, src=0)
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
            run_stage0(cfg, model, opt, step)
        else:
            loss = run_stage1(cfg, model, opt, step)
            print(f"step {step}: loss {loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
