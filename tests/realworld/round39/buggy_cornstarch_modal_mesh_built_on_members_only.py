"""Cornstarch ``ParallelizationPlan.materialize``: each modality's mesh is built only on the ranks of that modality.

Source: cornstarch-org/Cornstarch PR #76 ("fix: build every modality mesh on every rank (multi-mesh PG-creation
deadlock)"); modelled on ``cornstarch/distributed/parallelization.py`` ``ParallelizationPlan.materialize`` and
``cornstarch/distributed/process_group_mesh.py`` ``ModalProcessGroupMesh``.

A multimodal model puts its vision encoder on rank 0 and its language model on ranks 1-2 (tensor parallel 2).
``ModalProcessGroupMesh`` builds a 5-D ``DeviceMesh`` (dp, pp, cp, tp, ep) for a modality, and a ``DeviceMesh``
calls ``new_group`` once per sub-group of every dimension -- a call every rank of the world must make in the same
order. ``materialize`` skipped the modalities a rank is not in (``if my_rank not in modality_ranks: continue``), so
rank 0 made the vision mesh's five ``new_group`` calls and ranks 1-2 the language model's nine. The PR's trace had all
ranks stuck in ``new_group`` under ``materialize``. On torch 2.13 (no store barrier in ``new_group`` unless
``TORCH_DIST_INIT_BARRIER=1``) the skipped calls show at the next group every rank creates: the cross-modality group
made right after ``materialize`` gets a different name (store prefix) on rank 0 than on ranks 1-2, and every rank
waits in its creation for peers that publish under the other name.

BUG: the ``continue`` that skips building the meshes of the other modalities.
"""

import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

KIND = "buggy"
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
        if my_rank not in ranks:
            continue  # BUG
        meshes[name] = ModalProcessGroupMesh(ranks, SHAPES[name])
    return meshes


def worker():
    torch.manual_seed(0)
    meshes = materialize()
    # the group the cross-mesh schedule uses to hand activations from the encoder to the language model
    bridge = dist.new_group(ranks=list(range(dist.get_world_size())))  # WAITS
    mine = [m for m in meshes.values() if m.is_member][0]
    x = torch.randn(4, 3)
    if mine.device_mesh["tp"].size() > 1:
        dist.all_reduce(x, group=mine.tp_group)
    dist.all_reduce(x, group=bridge)
    print(f"rank {dist.get_rank()}: step done, checksum {x.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
