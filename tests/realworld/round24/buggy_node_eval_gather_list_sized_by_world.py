"""Per-node evaluation gathered inside the node's subgroup with an output list sized by the world.

Models open_clip ``src/open_clip_train/distributed.py`` (``all_gather_object(args, obj)`` builds
``[None for _ in range(args.world_size)]`` and calls ``dist.all_gather_object``; ``is_local_master``), the
``torch.distributed.all_gather_object`` docstring ("object_list ... should be correctly sized as the size
of the group for this collective") and ``torch.distributed.new_subgroups`` (one group per node).

4 ranks stand for 2 nodes of 2 (``GPUS_PER_NODE``). Each node evaluates its own benchmark (node 0
"imagenet-val", node 1 "imagenet-v2"); the ranks of a node split the benchmark, gather their counts inside
the node group, the node's local master computes the accuracy, and the world then gathers one
(benchmark, accuracy) pair per node for the summary.

BUG: the learner adds a ``group`` argument to the open_clip-style helper but keeps the list sized by the
world. ``all_gather_object`` fills only the group's 2 slots; the other 2 stay ``None``. The local masters
(ranks 0 and 2) crash with ``TypeError`` summing the counts; ranks 1 and 3 wait in the world gather.
"""
import os
from datetime import timedelta
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20

GPUS_PER_NODE = 2
BENCHMARKS = ["imagenet-val", "imagenet-v2"]
SAMPLES_PER_BENCHMARK = 48


def make_args():
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("SLURM_LOCALID", rank % GPUS_PER_NODE))
    return SimpleNamespace(rank=rank, world_size=world, local_rank=local_rank)


def is_local_master(args):
    return args.local_rank == 0


def all_gather_object(args, obj, group=None):
    objects = [None for _ in range(args.world_size)]  # BUG
    dist.all_gather_object(objects, obj, group=group)
    return objects


def benchmark_shard(name, local_rank):
    g = torch.Generator().manual_seed(BENCHMARKS.index(name))
    x = torch.randn(SAMPLES_PER_BENCHMARK, 6, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.4 * x[:, 2] > 0).long()
    return x[local_rank::GPUS_PER_NODE], y[local_rank::GPUS_PER_NODE]


def evaluate_on_node(args, model, node_group):
    name = BENCHMARKS[args.rank // GPUS_PER_NODE]
    x, y = benchmark_shard(name, args.local_rank)
    with torch.no_grad():
        correct = int((model(x).argmax(dim=1) == y).sum())
    counts = all_gather_object(args, {"correct": correct, "n": len(y)}, group=node_group)
    if is_local_master(args):
        total = sum(c["correct"] for c in counts)
        seen = sum(c["n"] for c in counts)
        return name, total / seen
    return None


def worker():
    args = make_args()
    torch.manual_seed(0)
    model = nn.Linear(6, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[-1.0, -0.5, 0, 0, 0, 0], [1.0, 0.5, 0, 0, 0, 0]]))
        model.bias.zero_()
    node_group, _ = dist.new_subgroups(group_size=GPUS_PER_NODE)
    result = evaluate_on_node(args, model, node_group)
    summary = [None for _ in range(args.world_size)]
    dist.all_gather_object(summary, result)  # WAITS
    if args.rank == 0:
        for entry in summary:
            if entry is not None:
                print(f"{entry[0]}: top-1 {entry[1]:.3f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
