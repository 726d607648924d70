"""A CPU stand-in for ``torch.nn.SyncBatchNorm`` (a helper module of the round-10 SyncBN pair, not an item).

torch's ``SyncBatchNorm`` refuses CPU tensors ("SyncBatchNorm expected input tensor to be on GPU ..."), so the
pair uses this module, which keeps the behaviour that matters here from ``torch/nn/modules/batchnorm.py`` and
``torch/nn/modules/_functions.py``: in training mode every forward all-gathers each rank's per-channel mean,
mean of squares and count (``all_gather_into_tensor``) and normalises with the statistics of the whole group;
in eval mode it normalises with the running statistics and communicates nothing (the rule of pytorch/pytorch
PR #56982, "Avoid sync stats in eval mode"). Unlike torch's, its backward makes no collective: gradients flow
through the rank's own contribution to the statistics only.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F


class SyncBatchNorm1d(torch.nn.BatchNorm1d):
    def forward(self, x):
        if not self.training:
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps)
        world = dist.get_world_size()
        count = torch.tensor([float(x.shape[0])])
        local_sum = x.sum(0)
        local_sqsum = (x * x).sum(0)
        local = torch.cat([local_sum.detach(), local_sqsum.detach(), count])
        gathered = torch.empty(world * local.numel())
        dist.all_gather_into_tensor(gathered, local)
        gathered = gathered.view(world, -1)
        c = x.shape[1]
        total = gathered[:, 2 * c].sum()
        other_sum = gathered[:, :c].sum(0) - local_sum.detach()
        other_sqsum = gathered[:, c:2 * c].sum(0) - local_sqsum.detach()
        mean = (local_sum + other_sum) / total
        var = (local_sqsum + other_sqsum) / total - mean * mean
        with torch.no_grad():
            self.num_batches_tracked += 1
            unbiased = var.detach() * total / max(total.item() - 1.0, 1.0)
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean.detach())
            self.running_var.mul_(1 - self.momentum).add_(self.momentum * unbiased)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


def convert_sync_batchnorm(module):
    """``nn.SyncBatchNorm.convert_sync_batchnorm`` for ``BatchNorm1d`` layers."""
    out = module
    if isinstance(module, torch.nn.BatchNorm1d) and not isinstance(module, SyncBatchNorm1d):
        out = SyncBatchNorm1d(module.num_features, module.eps, module.momentum, module.affine,
                              module.track_running_stats)
        with torch.no_grad():
            out.weight.copy_(module.weight)
            out.bias.copy_(module.bias)
    for name, child in module.named_children():
        out.add_module(name, convert_sync_batchnorm(child))
    return out
