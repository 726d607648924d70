"""Fine-tuning with a frozen backbone: every rank loads the pretrained backbone, every rank freezes it from the
config, and only then is the model wrapped in DDP; the "trainable parameters" summary is printed by rank 0 only.

Models: the "DDP expects same model across all ranks, but Rank 0 has N params, while rank 1 has inconsistent M
params" reports (pytorch/pytorch issue #102438, a script modified from torchvision's classification reference;
huggingface/accelerate issue #1481; Kent0n-Li/ChatDoctor issue #49 with LoRA; yifan123/flow_grpo issue #245:
``requires_grad`` set differently by ``PeftModel.from_pretrained`` / ``set_adapter`` on the ranks), DDP's
``_verify_param_shape_across_processes`` (it compares the parameters that require grad), and PEFT's
``print_trainable_parameters``.

Correct: the freeze is decided by ``cfg["freeze_backbone"]``, the same on every rank, and applied before the DDP
constructor on every rank; the rank-0-only block only prints.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

CFG = {"freeze_backbone": True, "pretrained": "hub://toy-backbone", "epochs": 2}


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


def fetch_pretrained(name):
    """Stand-in for the hub download of the backbone weights (deterministic)."""
    torch.manual_seed(123)
    return Classifier().backbone.state_dict()


def load_pretrained(model, name):
    if not name:
        return False
    model.backbone.load_state_dict(fetch_pretrained(name))
    return True


def freeze_backbone(model):
    for p in model.backbone.parameters():
        p.requires_grad_(False)


def print_trainable_parameters(model):
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"trainable params: {trainable} || all params: {total} || trainable%: {100 * trainable / total:.2f}",
          flush=True)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Classifier()
    load_pretrained(model, CFG["pretrained"])  # every rank
    if CFG["freeze_backbone"]:
        freeze_backbone(model)
    if rank == 0:
        print_trainable_parameters(model)
    model = DDP(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)

    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 8, generator=g)
    ds = TensorDataset(x, (x.sum(-1) > 0).long() + (x[:, 0] > 1).long())
    sampler = DistributedSampler(ds, seed=0)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    for epoch in range(CFG["epochs"]):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    probe = model.module.head.weight.detach().clone()
    dist.all_reduce(probe)
    if rank == 0:
        print("head checksum", round(probe.sum().item(), 4), flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
