"""timm-style training with a model EMA kept on EVERY rank: after each epoch both the model and its EMA copy are
validated on every rank (each rank's shard, the counts all-reduced as timm's ``reduce_tensor`` does), and a
rank-0-only ``save_on_master`` writes the checkpoint.

Models: huggingface/pytorch-image-models ``train.py`` (``model_ema = ModelEmaV3(model)`` created on every process
before the DDP wrap; ``if model_ema is not None: ... ema_eval_metrics = validate(model_ema, ...)``; ``validate``
reduces loss/accuracy with ``reduce_tensor`` when distributed), timm ``utils/model_ema.py`` (``ModelEmaV2.update``:
``ema = decay * ema + (1 - decay) * model``) and the ``save_on_master`` helper of torchvision's
``references/classification/utils.py``.

Correct: the EMA exists on both ranks, so both run the EMA validation and its all-reduce; the checkpoint is written by
rank 0 only and no collective sits under that test.
"""
import copy
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2


class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.9):
        super().__init__()
        self.module = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1.0).long()
    return TensorDataset(x, y)


def reduce_tensor(t):
    rt = t.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt


@torch.no_grad()
def validate(model, loader):
    model.eval()
    stats = torch.zeros(2)
    for x, y in loader:
        stats += torch.tensor([(model(x).argmax(-1) == y).sum().item(), len(y)], dtype=torch.float32)
    stats = reduce_tensor(stats)
    return {"top1": 100.0 * stats[0].item() / stats[1].item()}


def train_one_epoch(model, loader, opt, model_ema):
    model.train()
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if model_ema is not None:
            model_ema.update(model.module)


def save_on_master(state, path):
    if dist.get_rank() == 0:
        torch.save(state, path)


def worker():
    rank = dist.get_rank()
    obj = [tempfile.mkdtemp(prefix="r20_ema_") if rank == 0 else None]
    dist.broadcast_object_list(obj, src=0)
    out_dir = obj[0]
    try:
        train_ds, val_ds = make_data(64, 1), make_data(32, 2)
        train_sampler = DistributedSampler(train_ds, shuffle=True, seed=0)
        train_loader = DataLoader(train_ds, batch_size=8, sampler=train_sampler)
        val_loader = DataLoader(val_ds, batch_size=8, sampler=DistributedSampler(val_ds, shuffle=False))

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
        model_ema = ModelEmaV2(model)  # every process keeps the EMA, as timm does
        model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        for epoch in range(EPOCHS):
            train_sampler.set_epoch(epoch)
            train_one_epoch(model, train_loader, opt, model_ema)
            metrics = validate(model, val_loader)
            if model_ema is not None:
                ema_metrics = validate(model_ema.module, val_loader)
                metrics["ema_top1"] = ema_metrics["top1"]
            if rank == 0:
                print(f"epoch {epoch}: {metrics}", flush=True)
            save_on_master({"model": model.module.state_dict(), "ema": model_ema.module.state_dict(),
                            "epoch": epoch}, os.path.join(out_dir, "last.pth"))
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
