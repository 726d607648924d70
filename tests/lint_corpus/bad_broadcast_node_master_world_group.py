# One rank per node reads a flag and shares it with the ranks of its node, but the broadcast is issued on the
# default (world) group: the source is each node's first global rank, so the ranks of one world-wide broadcast
# name different roots and wait for roots of their own. Modelled on ModelTC/LightLLM PR #986 ("fix multinode dp
# mode bug": the node master's broadcast of "new requests?" in base_backend.py) and torch's broadcast docs (`src`
# is one global rank for the whole group). Written here.
# expect: 22 different-roots dist.broadcast
# expect: 34 different-roots dist.broadcast_object_list
import os

import torch
import torch.distributed as dist

GPUS_PER_NODE = 8


def poll_node_queue(queue):
    rank = dist.get_rank()
    node_master = rank // GPUS_PER_NODE * GPUS_PER_NODE
    flag = torch.zeros(1, dtype=torch.int32)
    if rank == node_master:
        flag.fill_(int(bool(queue)))
    dist.broadcast(flag, src=node_master)
    return bool(flag.item())


class Router:
    def __init__(self):
        self.global_rank = int(os.environ["RANK"])
        self.node_index = self.global_rank // GPUS_PER_NODE

    def share_requests(self, requests):
        box = [requests if self.global_rank % GPUS_PER_NODE == 0 else None]
        leader = self.node_index * GPUS_PER_NODE
        dist.broadcast_object_list(box, src=leader)
        return box[0]
