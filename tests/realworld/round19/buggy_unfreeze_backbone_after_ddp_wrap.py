"""Backbone fine-tuning (train the head with the backbone frozen, unfreeze it after the first epoch) in a learner's
DDP script that freezes with ``requires_grad_(False)`` before wrapping the model in DDP.

Models: Lightning ``callbacks/finetuning.py`` ``BackboneFinetuning`` (freeze before training, ``unfreeze_and_add_param_group``
at ``unfreeze_backbone_at_epoch``), JDAI-CV/fast-reid issue #178 (fast-reid stopped toggling ``requires_grad`` and froze
through an optimizer param-group flag "because in DDP training, it will raise an error when changing the
requires_grad of param during training"), NVIDIA/apex PR #46 ("freezing/unfreezing of params on the fly" in apex's
DDP), pytorch/pytorch PR #2464 (DDP leaves out parameters that do not require grad); Megatron-LM's
``check_param_hashes_across_dp_replicas`` for the end-of-run check.

What it does: a backbone + head regressor; the backbone is frozen, the model wrapped in DDP, only the head is in the
optimizer. At the start of epoch 1 every rank sets ``requires_grad_(True)`` on the backbone and adds it to the
optimizer with a smaller learning rate. After three epochs every rank all-gathers a checksum of every parameter and
raises if the replicas differ.

The bug: DDP builds its reducer from the parameters that require grad when it is constructed; the backbone is not in
it, so after the unfreeze its gradients are each rank's own (nothing all-reduces them) and the replicas drift apart
silently. No rank waits: every rank raises in ``check_replicas_in_sync`` ("backbone.0.weight differs across ranks").
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

UNFREEZE_AT_EPOCH = 1


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=g)
    return TensorDataset(x, (x[:, :4].sum(1, keepdim=True) - x[:, 4:].prod(1, keepdim=True)))


def check_replicas_in_sync(module):
    world = dist.get_world_size()
    for name, param in module.named_parameters():
        local = param.detach().double().sum().reshape(1)
        sums = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(sums, local)
        if any(not torch.allclose(s, sums[0]) for s in sums):
            raise RuntimeError(f"{name} differs across ranks: {[round(s.item(), 6) for s in sums]}")


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = Regressor()
    for p in net.backbone.parameters():
        p.requires_grad_(False)
    model = DDP(net)
    opt = torch.optim.SGD(net.head.parameters(), lr=0.05)
    data = make_data()
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        if epoch == UNFREEZE_AT_EPOCH:
            for p in net.backbone.parameters():
                p.requires_grad_(True)  # BUG
            opt.add_param_group({"params": list(net.backbone.parameters()), "lr": 0.005})
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    check_replicas_in_sync(net)
    if rank == 0:
        print("replicas in sync", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
