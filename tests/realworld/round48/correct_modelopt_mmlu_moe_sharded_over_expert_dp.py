"""NVIDIA Model-Optimizer PR #1966 (2026-07; `megatron_mmlu` evaluation after quantisation): MMLU batches are
sharded over the *dense* data-parallel group (`if batch_idx % dp_size != dp_rank: continue`) and the per-subject
counts all-reduced over that group. For an MoE model with expert parallelism the forward runs an expert all-to-all
across the EP group, and EP overlaps the dense-DP group: each rank prefills a different batch, the EP peers'
all-to-alls desync, and with `n_batches % dp_size != 0` the trailing ranks block until the c10d timeout.

Here: 4 ranks, EP=2 (EP groups [0, 1] and [2, 3], expert-DP groups [0, 2] and [1, 3], every rank creating every
group in the same order); a tiny MoE layer whose forward dispatches tokens to the EP peer with `all_to_all_single`
and combines them back; 5 evaluation batches.

Fix (the PR): when EP > 1, shard over the expert-data-parallel group: the two ranks of an EP group share an
expert-DP rank, evaluate the same batches in lockstep (batches 0, 2, 4 for [0, 1]; 1, 3 for [2, 3]), and the counts
are all-reduced over the expert-DP group, whose members hold disjoint subsets.
"""
import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15
EP_SIZE = 2
N_BATCHES = 5


class TinyMoE(torch.nn.Module):
    """Router-free MoE stand-in: every rank holds one expert; tokens are split evenly over the EP group."""

    def __init__(self, ep_group):
        super().__init__()
        torch.manual_seed(0)
        self.head = torch.nn.Linear(4, 3)  # dense part: the same on every rank
        torch.manual_seed(1 + dist.get_rank())
        self.expert = torch.nn.Linear(4, 4)  # this rank's expert
        self.ep_group = ep_group

    def forward(self, x):
        dispatched = torch.empty_like(x)
        dist.all_to_all_single(dispatched, x.contiguous(), group=self.ep_group)
        out = self.expert(dispatched)
        combined = torch.empty_like(out)
        dist.all_to_all_single(combined, out.contiguous(), group=self.ep_group)
        return self.head(combined)


def build_groups():
    world = dist.get_world_size()
    ep = [dist.new_group(list(range(i, i + EP_SIZE))) for i in range(0, world, EP_SIZE)]
    edp = [dist.new_group(list(range(j, world, EP_SIZE))) for j in range(EP_SIZE)]
    return ep, edp


def megatron_mmlu(model, batches, dp_rank, dp_size, dp_group):
    correct = torch.zeros(1)
    total = torch.zeros(1)
    with torch.no_grad():
        for batch_idx, (x, y) in enumerate(batches):
            if batch_idx % dp_size != dp_rank:
                continue
            pred = model(x).argmax(-1)
            correct += (pred == y).sum()
            total += y.numel()
    counts = torch.cat([correct, total])
    dist.all_reduce(counts, group=dp_group)
    return (counts[0] / counts[1]).item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    ep_groups, edp_groups = build_groups()
    model = TinyMoE(ep_groups[rank // EP_SIZE]).eval()
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(4, 4, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(N_BATCHES)]
    dp_rank, dp_size, dp_group = rank // EP_SIZE, world // EP_SIZE, edp_groups[rank % EP_SIZE]
    acc = megatron_mmlu(model, batches, dp_rank, dp_size, dp_group)
    print(f"rank {rank}: MMLU accuracy {acc:.3f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
