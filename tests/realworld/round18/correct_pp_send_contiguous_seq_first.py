"""Two-stage pipeline that sends its activation in the seq-first wire layout, made contiguous before ``dist.send``.

Models: Megatron-LM's p2p contract (activations travel as ``(seq_length, micro_batch_size, hidden_size)``;
``LanguageModelEmbedding.forward`` ends with ``embeddings.transpose(0, 1).contiguous()``), pytorch/pytorch issue
#62283 (gloo refuses a discontiguous send) and PR #114982, and RLinf/RLinf issue #971 (p2p of non-contiguous views from
``torch.split``/``torch.chunk``).

What it does: rank 0 is the first pipeline stage (embedding plus an MLP block, batch-first internally), rank 1 the
second (a block and the LM head). For three steps a GPipe schedule sends each of three micro-batches' activations
to rank 1 as ``hidden.transpose(0, 1).contiguous()`` (``[s, b, h]``), rank 1 receives into a buffer of that shape,
runs its stage and the loss, and sends the activation gradients back; rank 0 back-propagates them through the
contiguous copy (autograd carries them to the view and the stage). Correct: every send has a matching receive of the
same size, and both stages finish.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB, HIDDEN, SEQ, MICRO, N_MICRO = 40, 16, 6, 2, 3


class FirstStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Parameter(torch.zeros(SEQ, HIDDEN))
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU())

    def forward(self, tokens):  # [b, s] -> [b, s, h]
        x = self.emb(tokens) + self.pos
        return x + self.mlp(x)


class LastStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU())
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, x):  # [s, b, h]
        return self.head(x + self.mlp(x))


def micro_batches(step):
    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, VOCAB, (MICRO * N_MICRO, SEQ + 1), generator=g)
    return [tokens[i * MICRO:(i + 1) * MICRO] for i in range(N_MICRO)]


def first_stage_step(model, opt, step):
    outputs = []
    for mb in micro_batches(step):
        hidden = model(mb[:, :-1])
        wire = hidden.transpose(0, 1).contiguous()  # [s, b, h], the layout the next stage expects
        dist.send(wire, dst=1)
        outputs.append(wire)
    opt.zero_grad()
    for wire in outputs:
        grad = torch.empty(SEQ, MICRO, HIDDEN)
        dist.recv(grad, src=1)
        wire.backward(grad)
    opt.step()


def last_stage_step(model, opt, step):
    inputs, losses = [], []
    for mb in micro_batches(step):
        buf = torch.empty(SEQ, MICRO, HIDDEN)
        dist.recv(buf, src=0)
        x = buf.requires_grad_()
        logits = model(x)  # [s, b, vocab]
        labels = mb[:, 1:].t()
        losses.append(F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1)) / N_MICRO)
        inputs.append(x)
    opt.zero_grad()
    for x, loss in zip(inputs, losses):
        loss.backward()
        dist.send(x.grad.contiguous(), dst=0)
    opt.step()
    return sum(l.item() for l in losses)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = FirstStage() if rank == 0 else LastStage()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        if rank == 0:
            first_stage_step(model, opt, step)
        else:
            loss = last_stage_step(model, opt, step)
            print(f"step {step}: loss {loss:.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
