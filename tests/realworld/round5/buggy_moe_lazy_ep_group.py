"""An aux-loss-free MoE router that creates its expert-parallel group lazily, on first use, with only the
ranks of its own block.

Source: axolotl-ai-cloud/axolotl PR #3533 ("MoE aux loss free"), review of
``src/axolotl/integrations/aux_free_router/plugin.py``: the plugin computed ``ranks`` for the calling rank's
expert-parallel block and cached ``dist.new_group(ranks)`` on first use, so each rank created only its own
block's group; the review (critical) points out that every rank must call ``new_group`` for every group, in
the same order. The same shape is pytorch/pytorch issue #130102 ("Distributed hangs when doing hierarchical
communication": ranks 0 and 3 call ``new_group([0, 3])``, ranks 1 and 2 ``new_group([1, 2])``, then a
barrier in the group). Here: 4 ranks, expert-parallel size 2; the router all-reduces its per-expert token
counts over the expert-parallel group to update its load-balancing bias (DeepSeek-V3's aux-loss-free
balancing), then the loss is averaged over the world.

The bug: ranks 0-1 call ``new_group([0, 1])`` while ranks 2-3 call ``new_group([2, 3])``; both calls are the
first ``new_group`` of their ranks, so torch gives the two groups the same name and store keys. Under
torchrun the job hung (in a run with stack dumps, one rank waited in the router's all-reduce and another in
the world all-reduce after it).
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 5
EP_SIZE = 2
EXPERTS = 4


class AuxFreeRouter(torch.nn.Module):
    def __init__(self, hidden=8, ep_size=EP_SIZE):
        super().__init__()
        self.gate = torch.nn.Linear(hidden, EXPERTS, bias=False)
        self.register_buffer("bias", torch.zeros(EXPERTS))
        self.ep_size = ep_size
        self._ep_group_cache = {}

    def ep_group(self):
        world = dist.get_world_size()
        if self.ep_size == world:
            return dist.group.WORLD
        start = (dist.get_rank() // self.ep_size) * self.ep_size
        ranks = tuple(range(start, start + self.ep_size))
        if ranks not in self._ep_group_cache:
            self._ep_group_cache[ranks] = dist.new_group(list(ranks))  # BUG
        return self._ep_group_cache[ranks]

    def forward(self, tokens, top_k=2):
        scores = torch.sigmoid(self.gate(tokens))
        chosen = torch.topk(scores + self.bias, top_k, dim=-1).indices
        counts = torch.bincount(chosen.flatten(), minlength=EXPERTS).float()
        dist.all_reduce(counts, group=self.ep_group())  # WAITS
        self.bias += 1e-3 * torch.sign(counts.mean() - counts)
        return torch.gather(scores, -1, chosen).sum(dim=-1)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    router = AuxFreeRouter()
    tokens = torch.randn(6, 8, generator=torch.Generator().manual_seed(rank))
    with torch.no_grad():
        weights = router(tokens)  # WAITS
    loss = weights.mean().reshape(1)
    dist.all_reduce(loss)  # WAITS
    return loss.item() / dist.get_world_size()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
