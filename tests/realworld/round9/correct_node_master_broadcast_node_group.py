"""Modelled on ModelTC/LightLLM PR #986 ("fix multinode dp mode bug": in
``server/router/model_infer/mode_backend/base_backend.py`` ``_try_read_new_reqs_normal``, the node's master rank
sets ``node_broadcast_tensor`` to 1 when there are new requests and broadcasts it to its node with
``dist.broadcast(..., src=src_rank_id, group=self.node_nccl_group)``; the fix computes the source as the node
master's global rank, ``node_rank * node_world_size``) and on torch's ``new_subgroups`` docs. The engine is a
stand-in: a shared request queue per node, one tensor-parallel "decode step" (an all-reduce in the node's group)
per read, and a world-wide all-reduce of the served counts at the end.

What it does: 4 ranks as 2 nodes of 2. Every rank creates the node subgroups with ``new_subgroups``; in each
polling round the node master looks at its node's queue and broadcasts "new requests?" to its node; the node's
ranks then run a decode step together, or skip it together.

Why it looks suspicious but is right: ranks of different nodes call ``broadcast`` with different ``src`` values
(0 on node 0, 2 on node 1) in the same round, and the decode step's all-reduce runs under a flag that is
different on the two nodes; each broadcast and each all-reduce is in the node's own group, whose members all
have the same source and the same flag.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

NODE_WORLD_SIZE = 2
ROUNDS = 6


class RequestQueue:
    """Stands in for the node's shared request queue: node 0 gets requests in even rounds, node 1 in odd ones."""

    def __init__(self, node_rank):
        self.node_rank = node_rank

    def poll(self, round_index):
        return round_index % 2 == self.node_rank


class ModeBackend:
    def __init__(self, node_group):
        self.global_rank = dist.get_rank()
        self.node_world_size = NODE_WORLD_SIZE
        self.node_rank = self.global_rank // NODE_WORLD_SIZE
        self.rank_in_node = self.global_rank % NODE_WORLD_SIZE
        self.node_group = node_group
        self.queue = RequestQueue(self.node_rank)
        self.node_broadcast_tensor = torch.zeros(1, dtype=torch.int32)
        self.served = 0

    def _try_read_new_reqs(self, round_index):
        if self.rank_in_node == 0:
            self.node_broadcast_tensor.fill_(1 if self.queue.poll(round_index) else 0)
        src_rank_id = self.node_rank * self.node_world_size
        dist.broadcast(self.node_broadcast_tensor, src=src_rank_id, group=self.node_group)
        return bool(self.node_broadcast_tensor.item())

    def decode_step(self):
        partial_logits = torch.full((8,), float(self.rank_in_node + 1))  # this rank's slice of the TP matmul
        dist.all_reduce(partial_logits, group=self.node_group)
        self.served += 1

    def loop(self):
        for round_index in range(ROUNDS):
            if self._try_read_new_reqs(round_index):
                self.decode_step()
        served = torch.tensor([self.served])
        dist.all_reduce(served)
        return int(served)


def worker():
    node_group, _ = dist.new_subgroups(group_size=NODE_WORLD_SIZE)
    served = ModeBackend(node_group).loop()
    if dist.get_rank() == 0:
        print(f"decode steps run, summed over ranks: {served}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
