# The twin of bad_load_state_dict_hook_gathers_rank0.py: every rank loads (the hook's all_gather is every
# rank's), and a plain module without such a hook is loaded on rank 0 alone. Written here.
# expect: none
import torch
import torch.distributed as dist
import torch.nn as nn


class ShardedLinear(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.shard = nn.Parameter(torch.zeros(n // dist.get_world_size()))
        self.register_load_state_dict_pre_hook(ShardedLinear._unshard_before_load)

    def full(self):
        parts = [torch.empty_like(self.shard) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, self.shard.detach())
        return torch.cat(parts)

    @staticmethod
    def _unshard_before_load(module, state_dict, prefix, *args):
        module.full()


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)


def finetune(path):
    model = ShardedLinear(8)
    model.load_state_dict(torch.load(path))
    head = Head()
    if dist.get_rank() == 0:
        head.load_state_dict(torch.load(path + ".head"))
    dist.barrier()
