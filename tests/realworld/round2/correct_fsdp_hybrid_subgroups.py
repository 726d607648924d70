"""FSDP's hybrid-shard groups: an intra-node group from ``new_subgroups`` and an inter-node group from
``new_subgroups_by_enumeration``; gradients reduced inside the node, then across nodes; the node leaders (local
rank 0) report over the inter-node group that holds exactly the leaders.

Source: pytorch/pytorch torch/distributed/fsdp/_init_utils.py (``_init_intra_node_process_group`` calls
``dist.new_subgroups()``; ``_init_inter_node_process_group`` enumerates the ranks with the same local rank;
every rank creates every subgroup) and the ``new_subgroups`` docstring's example (all_reduce inside the
subgroup the rank belongs to). Two "nodes" of two ranks each.
Correct: every rank builds every subgroup; ``if local_rank == 0`` selects ranks 0 and 2, the whole
inter-node group [0, 2].
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 3.0
RANKS_PER_NODE = 2


def init_hybrid_groups():
    intra, _ = dist.new_subgroups(group_size=RANKS_PER_NODE)
    world = dist.get_world_size()
    by_local_rank = [list(range(local, world, RANKS_PER_NODE)) for local in range(RANKS_PER_NODE)]
    inter, _ = dist.new_subgroups_by_enumeration(ranks_per_subgroup_list=by_local_rank)
    return intra, inter


def worker():
    intra, inter = init_hybrid_groups()
    local_rank = dist.get_rank(group=intra)
    torch.manual_seed(0); model = torch.nn.Linear(4, 1)  # the same initial weights on every rank (FSDP: sync_module_states)
    for step in range(3):
        model(torch.full((2, 4), float(dist.get_rank() + step))).sum().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, group=intra)
            dist.all_reduce(p.grad, group=inter)
            p.grad /= dist.get_world_size()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
        model.zero_grad()
        if local_rank == 0:
            norm = torch.stack([p.detach().norm() for p in model.parameters()]).sum()
            dist.all_reduce(norm, group=inter)  # ranks 0 and 2: the whole inter-node group
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    everyone = [torch.empty_like(weights) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, weights)
    assert all(torch.allclose(w, weights) for w in everyone)
    return weights.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
