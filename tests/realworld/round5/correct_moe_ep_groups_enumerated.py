"""An aux-loss-free MoE router whose expert-parallel groups are created up front, by every rank, with
``new_subgroups_by_enumeration``.

Source: the fix asked for in the review of axolotl-ai-cloud/axolotl PR #3533 ("MoE aux loss free": every
rank must call ``new_group`` for every group, in the same order) and pytorch/pytorch's
``torch.distributed.new_subgroups_by_enumeration`` (docstring example: ``cur_subgroup, subgroups =
dist.new_subgroups_by_enumeration(ranks_per_subgroup_list=[[0, 2], [1, 3]])``, then an ``all_reduce`` in the
subgroup the rank belongs to; it calls ``new_group`` for each listed group on every rank). Here: 4 ranks,
expert-parallel size 2, blocks [0, 1] and [2, 3]; the router all-reduces its per-expert token counts over its
block to update its load-balancing bias, then the loss is averaged over the world.

Correct: every rank enters group creation for both blocks, in the same order, before any collective; the
bias updates agree within a block.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 5
EP_SIZE = 2
EXPERTS = 4


def expert_parallel_group(ep_size):
    world = dist.get_world_size()
    blocks = [list(range(start, start + ep_size)) for start in range(0, world, ep_size)]
    group, _ = dist.new_subgroups_by_enumeration(ranks_per_subgroup_list=blocks)
    return group


class AuxFreeRouter(torch.nn.Module):
    def __init__(self, ep_group, hidden=8):
        super().__init__()
        self.gate = torch.nn.Linear(hidden, EXPERTS, bias=False)
        self.register_buffer("bias", torch.zeros(EXPERTS))
        self.ep_group = ep_group

    def forward(self, tokens, top_k=2):
        scores = torch.sigmoid(self.gate(tokens))
        chosen = torch.topk(scores + self.bias, top_k, dim=-1).indices
        counts = torch.bincount(chosen.flatten(), minlength=EXPERTS).float()
        dist.all_reduce(counts, group=self.ep_group)
        self.bias += 1e-3 * torch.sign(counts.mean() - counts)
        return torch.gather(scores, -1, chosen).sum(dim=-1)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    router = AuxFreeRouter(expert_parallel_group(EP_SIZE))
    tokens = torch.randn(6, 8, generator=torch.Generator().manual_seed(rank))
    with torch.no_grad():
        weights = router(tokens)
    biases = [torch.zeros(EXPERTS) for _ in range(dist.get_world_size())]
    dist.all_gather(biases, router.bias)
    partner = rank ^ 1
    assert torch.equal(biases[rank], biases[partner]), biases
    loss = weights.mean().reshape(1)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
