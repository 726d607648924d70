"""verl's TensorRT-LLM rollout, VLM code path: each data-parallel replica's leader prepares the multimodal inputs and
broadcasts them in its replica group with ``src=0`` -- global rank 0, which only replica 0's group contains.

Models: verl-project/verl PR #5701 ("[trtllm,rollout] fix hang issue from VLM codepath": "src=0 means global rank 0.
But global rank 0 is only the leader of DP replica 0. For replica 1, 2, etc., their exclude_dp group doesn't include
global rank 0 at all"; the fix: "dist.get_global_rank(exclude_dp_group, 0) converts local rank 0 within this group to
the actual global rank of that group's leader"), introduced by the VLM PR #5149. Code modelled (written here, not
copied): verl's TRT-LLM rollout worker (``generate_sequences`` for multimodal prompts: the replica leader expands the
image placeholders and broadcasts the prepared request to the other ranks of its replica group, the tensor-parallel
generation inside the replica, the trainer collecting every replica's outputs), ``torch.distributed.new_group`` /
``broadcast_object_list`` (stand-ins: a tensor-parallel toy decoder whose row-parallel output is all-reduced in the
replica group, greedy decoding of 3 tokens, a world ``all_gather_object`` for the outputs).

The bug: replica 1 (ranks 2 and 3) broadcasts from global rank 0, which is not in its group: torch raises on both of
its ranks ("Global rank 0 is not part of group"), and replica 0's ranks wait in the world gather of the outputs.
4 ranks (2 replicas x tensor parallel 2).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 15

TP_SIZE = 2
IMAGE_TOKEN, IMAGE_PATCHES = 7, 3


def build_replica_groups(world_size, tp_size):
    """Every rank makes every group (new_group is collective over the world), keeps its own."""
    mine = None
    for start in range(0, world_size, tp_size):
        ranks = list(range(start, start + tp_size))
        group = dist.new_group(ranks)
        if dist.get_rank() in ranks:
            mine = group
    return mine


class TPDecoder:
    """A column-parallel projection then a row-parallel one, reduced in the replica group."""

    def __init__(self, vocab, hidden, tp_rank, group):
        gen = torch.Generator().manual_seed(5)
        embed = torch.randn(vocab, hidden, generator=gen)
        w1 = torch.randn(hidden, 4 * hidden, generator=gen) / hidden ** 0.5
        w2 = torch.randn(4 * hidden, vocab, generator=gen) / (4 * hidden) ** 0.5
        shard = 4 * hidden // TP_SIZE
        self.embed = embed
        self.w1 = w1[:, tp_rank * shard:(tp_rank + 1) * shard]
        self.w2 = w2[tp_rank * shard:(tp_rank + 1) * shard]
        self.group = group

    def next_token(self, ids):
        h = self.embed[torch.tensor(ids)].mean(0)
        partial = torch.relu(h @ self.w1) @ self.w2
        dist.all_reduce(partial, group=self.group)
        return int(partial.argmax())


def expand_image_placeholders(prompt):
    out = []
    for tok in prompt:
        out.extend([IMAGE_TOKEN] * IMAGE_PATCHES if tok == IMAGE_TOKEN else [tok])
    return out


def generate_sequences(prompts, decoder, group, tp_rank):
    holder = [None]
    if tp_rank == 0:
        holder[0] = [expand_image_placeholders(p) for p in prompts]
    dist.broadcast_object_list(holder, src=0, group=group)  # BUG
    responses = []
    for ids in holder[0]:
        ids = list(ids)
        for _ in range(3):
            ids.append(decoder.next_token(ids))
        responses.append(ids[-3:])
    return responses


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    group = build_replica_groups(world, TP_SIZE)
    dp_rank, tp_rank = rank // TP_SIZE, rank % TP_SIZE
    decoder = TPDecoder(vocab=16, hidden=8, tp_rank=tp_rank, group=group)
    batch = [[1, IMAGE_TOKEN, 4, 2], [3, 5, IMAGE_TOKEN], [2, 2, 9], [IMAGE_TOKEN, 6, 1]]
    prompts = batch[dp_rank * 2:(dp_rank + 1) * 2]
    responses = generate_sequences(prompts, decoder, group, tp_rank)
    gathered = [None] * world
    dist.all_gather_object(gathered, (dp_rank, tp_rank, responses))  # WAITS
    outputs = [resp for (dp, tp, resp) in gathered if tp == 0]
    print(f"[rank {rank}] replica {dp_rank}: {len(outputs)} replica outputs, {outputs}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
