"""Cornstarch ``ParallelizationPlan.materialize``, fixed: every rank builds every modality's mesh.

Source: cornstarch-org/Cornstarch PR #76 ("fix: build every modality mesh on every rank (multi-mesh PG-creation
deadlock)"); modelled on ``cornstarch/distributed/parallelization.py`` ``ParallelizationPlan.materialize`` and
``cornstarch/distributed/process_group_mesh.py`` ``ModalProcessGroupMesh``.

The PR's fix: every rank builds every modality's mesh, in the same order; a rank that is not in a modality takes
part in its ``new_group`` calls as a non-member (``is_member`` False) and keeps using only its own mesh. The group
made after ``materialize`` then has the same name on every rank.
"""

import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 15

MODALITIES = {"vision": [0], "language": [1, 2]}
SHAPES = {"vision": (1, 1, 1, 1, 1), "language": (1, 1, 1, 2, 1)}  # (dp, pp, cp, tp, ep)


class ModalProcessGroupMesh:
    def __init__(self, global_ranks, shape):
        self.global_ranks = global_ranks
        self.is_member = dist.get_rank() in global_ranks
        mesh = torch.tensor(global_ranks, dtype=torch.int).reshape(shape)
        self.device_mesh = DeviceMesh("cpu", mesh, mesh_dim_names=("dp", "pp", "cp", "tp", "ep"))

    @property
    def tp_group(self):
        return self.device_mesh["tp"].get_group()


def materialize():
    my_rank = dist.get_rank()
    meshes = {}
    for name, ranks in MODALITIES.items():
        # every rank builds every modality's mesh; a non-member only takes part in the new_group calls
        meshes[name] = ModalProcessGroupMesh(ranks, SHAPES[name])
    return meshes


def worker():
    torch.manual_seed(0)
    meshes = materialize()
    # the group the cross-mesh schedule uses to hand activations from the encoder to the language model
    bridge = dist.new_group(ranks=list(range(dist.get_world_size())))
    mine = [m for m in meshes.values() if m.is_member][0]
    x = torch.randn(4, 3)
    if mine.device_mesh["tp"].size() > 1:
        dist.all_reduce(x, group=mine.tp_group)
    dist.all_reduce(x, group=bridge)
    print(f"rank {dist.get_rank()}: step done, checksum {x.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
