"""Greedy generation with a ZeRO-3-style sharded model, each rank stopping at its own end-of-sequence.

Modelled on huggingface/transformers PR #10753 ("[DeepSpeed] ZeRO Stage 3": under ZeRO-3 "if this gpu finished
before max_length was reached, it must continue running forward so that the other gpus who may have not
finished their generate yet, can complete as they rely on this gpu to received its slice of params", hence
``generate(synced_gpus=True)``), deepspeedai/DeepSpeed issue #8262 ("ZeRO-3 ... rollout deadlocks when
data-parallel ranks finish generation at different lengths") and issue #2022, deepspeedai/DeepSpeedExamples
PR #636 (DS-Chat step 3 hung until ``synced_gpus=True``). Written here: the "model" is a tiny bigram table whose
rows are sharded over the ranks and all-gathered in every forward, as ZeRO-3 gathers a layer's parameters; its
greedy continuation of token t is t + 1, and token 7 is end-of-sequence.

Bug: the decoding loop breaks as soon as this rank's sequence emits EOS. Rank 0's prompt ends at token 4 (EOS
after 3 new tokens), rank 1's at token 1 (EOS after 6): rank 1's fourth forward waits for a parameter
all-gather that rank 0 no longer makes.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 8
EOS = VOCAB - 1
MAX_NEW_TOKENS = 10


class ShardedBigram(torch.nn.Module):
    """A bigram LM whose (VOCAB x VOCAB) logit table is partitioned by rows, ZeRO-3 style."""

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
        dist.all_gather(parts, self.shard.detach())  # WAITS
        return torch.cat(parts)

    def forward(self, ids):
        table = self.gathered_table()  # WAITS
        return table[ids[:, -1]]


@torch.no_grad()
def generate(model, ids):
    for _ in range(MAX_NEW_TOKENS):
        logits = model(ids)  # WAITS
        next_token = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_token], dim=1)
        if bool((next_token == EOS).all()):
            break  # BUG
    return ids


def worker():
    rank = dist.get_rank()
    model = ShardedBigram()
    prompt = torch.tensor([[2, 3, 4]]) if rank == 0 else torch.tensor([[0, 1]])
    out = generate(model, prompt)  # WAITS
    return out.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
