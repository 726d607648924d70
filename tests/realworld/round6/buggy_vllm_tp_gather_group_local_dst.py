"""Vocab-parallel logits gathered to "TP rank 0" with ``dst`` given as a group rank, under pipeline parallelism.

Modelled on vllm-project/vllm PR #2528 / #2530 ("Fix tensor gather rank error": in
``tensor_model_parallel_gather()``, "the argument ``dst`` requires specifying a global rank, even if the
``group`` argument is specified"; the fix makes it work "when pipeline parallelism > 1") and pytorch/pytorch
PR #118359 ("'dst' arg for many collectives is always in 'global' rank regardless of whether a subgroup is
passed in"); the later fix style is radixark/miles PR #833 (``dst=dist.get_global_rank(group, 0)``). Written
here on 4 ranks: 2 pipeline stages x 2 tensor-parallel ranks, TP groups {0, 1} and {2, 3}; stage 0 embeds
and sends its hidden state to stage 1, whose TP ranks each hold half of the vocabulary's output columns; the
last stage's first rank samples greedily and broadcasts the token to every rank.

Bug: ``gather(..., dst=0, group=tp_group)`` with the TP-local index 0. On the last stage (TP group {2, 3})
global rank 0 is not in the group, so ranks 2 and 3 fail in the gather, and the first stage waits for a token
broadcast from rank 2 that never comes.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20

TP = 2
HIDDEN = 6
VOCAB = 10
STEPS = 3


def build_groups():
    world = dist.get_world_size()
    groups = [dist.new_group(list(range(start, start + TP))) for start in range(0, world, TP)]  # every rank
    return groups[dist.get_rank() // TP]


def tensor_model_parallel_gather(input_, tp_group, dst=0):
    world_size = dist.get_world_size(tp_group)
    if dist.get_rank(tp_group) == dst:
        gather_list = [torch.empty_like(input_) for _ in range(world_size)]
    else:
        gather_list = None
    dist.gather(input_, gather_list, dst=dst, group=tp_group)  # BUG
    if dist.get_rank(tp_group) == dst:
        return torch.cat(gather_list, dim=-1)
    return None


def decode_step(token, tp_group, weights):
    rank = dist.get_rank()
    stage, tp_rank = rank // TP, rank % TP
    last_stage_driver = (dist.get_world_size() // TP - 1) * TP  # global rank 2
    if stage == 0:
        hidden = weights["embed"][token].reshape(1, HIDDEN)
        dist.send(hidden, dst=rank + TP)
    else:
        hidden = torch.empty(1, HIDDEN)
        dist.recv(hidden, src=rank - TP)
        logits_shard = hidden @ weights["lm_head"][:, tp_rank * (VOCAB // TP):(tp_rank + 1) * (VOCAB // TP)]
        logits = tensor_model_parallel_gather(logits_shard, tp_group)
    next_token = torch.zeros(1, dtype=torch.long)
    if rank == last_stage_driver:
        next_token[0] = int(logits.argmax(dim=-1))
    dist.broadcast(next_token, src=last_stage_driver)  # WAITS
    return int(next_token)


def worker():
    torch.manual_seed(0)
    weights = {"embed": torch.randn(VOCAB, HIDDEN), "lm_head": torch.randn(HIDDEN, VOCAB)}
    tp_group = build_groups()
    token, out = 3, []
    for _ in range(STEPS):
        token = decode_step(token, tp_group, weights)  # WAITS
        out.append(token)
    return out


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
