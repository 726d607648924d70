"""Greedy generation with a ZeRO-3-style sharded model and ``synced_gpus``: finished ranks keep stepping.

Modelled on huggingface/transformers ``generation/utils.py`` (``synced_gpus``: ``this_peer_finished`` is
all-reduced every step in ``_has_unfinished_sequences``; a finished peer keeps calling the model and discards
the output, "don't waste resources running the code we don't need"), introduced by PR #10753 and made automatic
for ZeRO-3 by PR #22242. Written here: a tiny bigram table sharded by rows and all-gathered in every forward;
token 7 is end-of-sequence.

Looks suspicious: the ranks finish their own sequences at different steps (rank 0 after 3 new tokens, rank 1
after 6) and the loop body branches on a per-rank ``this_peer_finished``, but every rank makes the same
forward (and so the same all-gather) every step, and the loop exits only when the all-reduced flag says every
peer is done.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 8
EOS = VOCAB - 1
MAX_NEW_TOKENS = 10


class ShardedBigram(torch.nn.Module):
    def __init__(self):
        super().__init__()
        rank, world = dist.get_rank(), dist.get_world_size()
        full = torch.full((VOCAB, VOCAB), -5.0)
        for t in range(VOCAB):
            full[t, min(t + 1, EOS)] = 5.0
        rows = VOCAB // world
        self.shard = torch.nn.Parameter(full[rank * rows:(rank + 1) * rows].clone())

    def gathered_table(self):
        parts = [torch.empty_like(self.shard) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, self.shard.detach())
        return torch.cat(parts)

    def forward(self, ids):
        return self.gathered_table()[ids[:, -1]]


def has_unfinished_sequences(this_peer_finished):
    flag = torch.tensor(0.0 if this_peer_finished else 1.0)
    dist.all_reduce(flag)
    return flag.item() > 0.0


@torch.no_grad()
def generate(model, ids):
    this_peer_finished = False
    steps = 0
    while has_unfinished_sequences(this_peer_finished) and steps < MAX_NEW_TOKENS:
        logits = model(ids)  # every peer runs the forward, finished or not
        steps += 1
        if this_peer_finished:
            continue  # don't waste resources running the code we don't need
        next_token = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_token], dim=1)
        if bool((next_token == EOS).all()):
            this_peer_finished = True
    return ids


def worker():
    rank = dist.get_rank()
    model = ShardedBigram()
    prompt = torch.tensor([[2, 3, 4]]) if rank == 0 else torch.tensor([[0, 1]])
    out = generate(model, prompt)
    assert out[0, -1].item() == EOS, out
    return out.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
