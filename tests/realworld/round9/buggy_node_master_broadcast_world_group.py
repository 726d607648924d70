"""Modelled on ModelTC/LightLLM PR #986 ("fix multinode dp mode bug": ``_try_read_new_reqs_normal`` in
``server/router/model_infer/mode_backend/base_backend.py``; the node's master rank broadcasts "new requests?" to
its node, and the fix makes ``src`` the node master's global rank, ``node_rank * node_world_size``, in the node's
group). The engine is a stand-in: a shared request queue per node, a tensor-parallel "decode step" (an all-reduce
in the node's group) per read, and a world-wide all-reduce of the served counts at the end.

The bug: the node-local broadcast is issued without ``group=``, on the default (world) group, with the source
computed per node: ranks 0 and 1 broadcast from 0, ranks 2 and 3 from 2, in one world-wide collective. Nothing
checks that the ranks agree on ``src``: each rank lays out the broadcast's transfers from its own root, the
sends and receives of the two layouts do not match, and under gloo all four ranks stay in the first broadcast
until the group timeout (with NCCL a mismatched root is reported as a hang, or as flags that are silently
wrong).

Correct twin: ``correct_node_master_broadcast_node_group`` (the same ``src`` values, each in the node's group).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
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
        dist.broadcast(self.node_broadcast_tensor, src=src_rank_id)  # BUG  # WAITS
        return bool(self.node_broadcast_tensor.item())

    def decode_step(self):
        partial_logits = torch.full((8,), float(self.rank_in_node + 1))  # this rank's slice of the TP matmul
        dist.all_reduce(partial_logits, group=self.node_group)
        self.served += 1

    def loop(self):
        for round_index in range(ROUNDS):
            if self._try_read_new_reqs(round_index):  # WAITS
                self.decode_step()
        served = torch.tensor([self.served])
        dist.all_reduce(served)
        return int(served)


def worker():
    node_group, _ = dist.new_subgroups(group_size=NODE_WORLD_SIZE)
    served = ModeBackend(node_group).loop()  # WAITS
    if dist.get_rank() == 0:
        print(f"decode steps run, summed over ranks: {served}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
