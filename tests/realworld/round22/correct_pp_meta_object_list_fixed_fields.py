"""Round 22: pipeline metadata sent with ``send_object_list`` as a fixed-length list (mask shape or ``None``).

Models: ColossalAI ``pipeline/p2p.py`` (``create_send_metadata`` / ``P2PMetadata``: the sender describes the tensors
it is about to send in a pickled object, the receiver allocates buffers from it) and the legacy
``communication/p2p_v2.py`` ``_send_object`` / ``_recv_object``; ``torch.distributed.send_object_list`` /
``recv_object_list`` (the sender sends a tensor of ``len(object_list)`` sizes, then the bytes; the receiver's list
length fixes how many sizes it receives); HF ``DataCollatorWithPadding`` (an ``attention_mask`` that only matters
when a batch is padded).

What it does: two pipeline stages.  For each batch stage 0 embeds the tokens, sends a metadata object list and then
the hidden states (and, when there is padding, the attention mask); stage 1 receives the metadata, allocates, receives
the tensors, pools the non-padded positions and computes the loss; the activation gradient goes back.

This is the correct twin: the metadata list always has two entries (the mask's shape or ``None``), like a
fixed-field ``P2PMetadata``, and the receiver allocates a two-element list, so the size tensors agree on every batch.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
HIDDEN = 8
PAD = 0


def batches():
    g = torch.Generator().manual_seed(0)
    lengths = [[5, 5, 5, 5], [5, 3, 4, 2], [4, 4, 2, 5]]
    for lens in lengths:
        ids = torch.full((len(lens), max(lens)), PAD)
        for i, n in enumerate(lens):
            ids[i, :n] = torch.randint(1, 30, (n,), generator=g)
        yield ids, (ids != PAD).long(), torch.tensor(lens, dtype=torch.float32)


def send_forward(hidden, mask):
    padded = bool((mask == 0).any())
    # always two entries: the receiver's list has a fixed length
    meta = [tuple(hidden.shape), tuple(mask.shape) if padded else None]
    dist.send_object_list(meta, dst=1)
    dist.send(hidden, dst=1)
    if padded:
        dist.send(mask, dst=1)


def recv_forward():
    meta = [None, None]
    dist.recv_object_list(meta, src=0)
    hidden = torch.empty(meta[0])
    dist.recv(hidden, src=0)
    mask = torch.ones(meta[0][:2], dtype=torch.long)
    if meta[1] is not None:
        mask = torch.empty(meta[1], dtype=torch.long)
        dist.recv(mask, src=0)
    return hidden, mask


def stage0(opt, emb):
    for ids, mask, _ in batches():
        opt.zero_grad()
        h = emb(ids)
        send_forward(h.detach(), mask)
        grad = torch.empty_like(h)
        dist.recv(grad, src=1)
        h.backward(grad)
        opt.step()


def stage1(opt, head):
    for step, (_, _, target) in enumerate(batches()):
        opt.zero_grad()
        h, mask = recv_forward()
        h.requires_grad_(True)
        pooled = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(head(pooled).squeeze(-1), target)
        loss.backward()
        dist.send(h.grad, dst=0)
        opt.step()
        print(f"batch {step}: loss {loss.item():.4f}", flush=True)


def worker():
    torch.manual_seed(0)
    if dist.get_rank() == 0:
        emb = nn.Embedding(30, HIDDEN, padding_idx=PAD)
        stage0(torch.optim.SGD(emb.parameters(), lr=0.05), emb)
    else:
        head = nn.Linear(HIDDEN, 1)
        stage1(torch.optim.SGD(head.parameters(), lr=0.05), head)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
