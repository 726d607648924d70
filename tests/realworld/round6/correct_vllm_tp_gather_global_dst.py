"""Vocab-parallel logits gathered to the TP group's first member, named by its global rank.

Modelled on vllm-project/vllm PR #2528 / #2530 (``tensor_model_parallel_gather()``: "Ensure the input args src
and dst rank are local rank with respect to the group"; "Ensure the rank passing into torch.distributed.func_name
is global rank") and radixark/miles PR #833 (``dst=dist.get_global_rank(gloo_group, 0)``). Written here on 4
ranks: 2 pipeline stages x 2 tensor-parallel ranks, TP groups {0, 1} and {2, 3}; stage 0 embeds and sends its
hidden state to stage 1, whose TP ranks each hold half of the vocabulary's output columns; the last stage's
first rank samples greedily and broadcasts the token.

Looks suspicious: ``dst`` of the gather and ``src`` of the broadcast are computed at run time, the gather list
exists on one rank only, the gather runs on the last stage only and the stages take different branches (send
against recv) — but ``dst`` is the same global rank on both members of the group that gathers, and the
broadcast's ``src`` is computed identically on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
    """``dst`` is the rank within ``tp_group``; torch gets the global rank."""
    world_size = dist.get_world_size(tp_group)
    if dist.get_rank(tp_group) == dst:
        gather_list = [torch.empty_like(input_) for _ in range(world_size)]
    else:
        gather_list = None
    dist.gather(input_, gather_list, dst=dist.get_global_rank(tp_group, dst), group=tp_group)
    if dist.get_rank(tp_group) == dst:
        return torch.cat(gather_list, dim=-1)
    return None


def decode_step(token, tp_group, weights):
    rank = dist.get_rank()
    stage, tp_rank = rank // TP, rank % TP
    last_stage_driver = (dist.get_world_size() // TP - 1) * TP  # global rank 2, on every rank
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
    dist.broadcast(next_token, src=last_stage_driver)
    return int(next_token)


def worker():
    torch.manual_seed(0)
    weights = {"embed": torch.randn(VOCAB, HIDDEN), "lm_head": torch.randn(HIDDEN, VOCAB)}
    tp_group = build_groups()
    token, out = 3, []
    for _ in range(STEPS):
        token = decode_step(token, tp_group, weights)
        out.append(token)
    if dist.get_rank() == 0:
        print("tokens", out)
    return out


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
