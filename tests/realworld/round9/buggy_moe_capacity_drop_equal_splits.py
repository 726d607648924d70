"""Modelled on Megatron-LM ``megatron/core/transformer/moe/token_dispatcher.py`` (``MoEAlltoAllTokenDispatcher``:
equal-split all-to-all, ``output_splits = None``, only on the ``drop_and_pad`` path, which Megatron keys to
``moe_pad_expert_input_to_capacity``; otherwise ``preprocess`` exchanges the per-expert token counts first) and
``moe_utils.py`` (``topk_softmax_with_capacity``: with ``--moe-expert-capacity-factor`` alone, tokens over capacity
are dropped but the kept ones are not padded, so each rank keeps a different number).

The bug: the dispatcher decides "equal splits, no count exchange" from the capacity factor being set instead of
from the padding flag. Capacity dropping without padding leaves each rank a different number of rows; the
equal-split ``all_to_all_single`` sizes its receive buffer from the rank's own rows. On gloo the mismatched
message sizes end the job in the first all-to-all: one rank aborts on the size; the other loses its peer there
or fails on the wrong-sized block it received. On NCCL the mismatch shows as a hang or corrupted expert inputs.

Correct twin: ``correct_moe_capacity_padded_alltoall`` (the padding makes the equal splits true).
"""

import math
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_EXPERTS = 4
HIDDEN = 4
TOKENS = 8
CAPACITY_FACTOR = 1.0
PAD_TO_CAPACITY = False


def route(logits, capacity):
    """Top-1 routing with capacity: (expert index, gate, kept mask) per token; first come, first kept."""
    probs = logits.softmax(dim=-1)
    gate, expert = probs.max(dim=-1)
    kept = torch.zeros_like(expert, dtype=torch.bool)
    used = [0] * NUM_EXPERTS
    for i, e in enumerate(expert.tolist()):
        if used[e] < capacity:
            kept[i] = True
            used[e] += 1
    return expert, gate, kept


class AlltoAllDispatcher:
    def __init__(self, ep_size, capacity, pad_to_capacity, capacity_factor):
        self.ep_size = ep_size
        self.capacity = capacity
        self.pad_to_capacity = pad_to_capacity
        self.drop_and_pad = capacity_factor is not None  # BUG

    def permute(self, tokens, expert, kept):
        rows, slots = [], []
        for e in range(NUM_EXPERTS):
            index = torch.nonzero((expert == e) & kept).flatten()
            rows.append(tokens[index])
            slots.append(index)
            if self.pad_to_capacity:
                pad = self.capacity - len(index)
                rows.append(tokens.new_zeros(pad, HIDDEN))
                slots.append(torch.full((pad,), -1))
        return torch.cat(rows), torch.cat(slots)

    def all_to_all(self, rows):
        if self.drop_and_pad:
            out = torch.empty_like(rows)  # every rank sends capacity rows per expert: equal splits
            dist.all_to_all_single(out, rows)  # WAITS
            return out
        raise NotImplementedError("dropless routing exchanges the token counts first")


class Experts(torch.nn.Module):
    def __init__(self, num_local):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(num_local, HIDDEN, HIDDEN) * 0.1)

    def forward(self, rows, capacity, ep_size):
        # rows: [source rank][local expert][capacity] flattened
        view = rows.view(ep_size, len(self.weight), capacity, HIDDEN)
        return torch.einsum("sech,ehk->seck", view, self.weight).reshape(-1, HIDDEN)


def moe_layer(tokens, router, experts, dispatcher):
    expert, gate, kept = route(router(tokens), dispatcher.capacity)
    rows, slots = dispatcher.permute(tokens, expert, kept)
    received = dispatcher.all_to_all(rows)  # WAITS
    processed = experts(received, dispatcher.capacity, dispatcher.ep_size)
    returned = dispatcher.all_to_all(processed)
    out = tokens.clone()  # dropped tokens pass through (residual)
    real = slots >= 0
    out[slots[real]] += returned[real] * gate[slots[real]].unsqueeze(-1)
    return out, int(kept.sum())


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    router = torch.nn.Linear(HIDDEN, NUM_EXPERTS)
    experts = Experts(NUM_EXPERTS // world)
    capacity = math.ceil(TOKENS * CAPACITY_FACTOR / NUM_EXPERTS)
    dispatcher = AlltoAllDispatcher(world, capacity, PAD_TO_CAPACITY, CAPACITY_FACTOR)
    torch.manual_seed(100 + rank)  # each rank's own micro-batches
    total_kept = 0
    with torch.no_grad():
        for step in range(3):
            out, kept = moe_layer(torch.randn(TOKENS, HIDDEN), router, experts, dispatcher)  # WAITS
            total_kept += kept
    summary = torch.tensor([out.abs().sum().item(), float(total_kept)])
    dist.all_reduce(summary)
    if rank == 0:
        print(f"output checksum {summary[0]:.4f}, tokens kept {int(summary[1])} of {3 * TOKENS * world}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
