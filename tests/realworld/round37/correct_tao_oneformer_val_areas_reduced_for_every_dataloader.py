"""NVIDIA TAO (OneFormer) -- validation statistics reduced for every configured dataloader, zeros where this rank
received no samples (PR #74).

Source: NVIDIA-TAO/tao-pytorch PR #74 ("[TAO-0000][Bugfix] Correct OneFormer PTM, metrics, and runtime overlay"), the
change to ``nvidia_tao_pytorch/cv/oneformer/model/pl_oneformer.py`` ``_compute_and_log_metrics`` ("Lightning can invoke
this hook on a rank that received no samples. Still enter every configured dataloader's collective with zero local
statistics so that ranks cannot diverge or deadlock") and its review ("the reduction now runs symmetrically").
Modelled on the 7.0.0 release of that file: ``validation_step`` appends to ``validation_step_outputs[dataloader_idx]``;
``_compute_and_log_metrics`` loops over ``sorted(outputs_by_dl.keys())`` with ``multi = dataset_names is not None and
len(outputs_by_dl) > 1`` and logs ``mIoU/<ds>`` and ``all_acc/<ds>`` with ``sync_dist=True`` (a mean all-reduce of
each value), then the combined ``mIoU`` and ``all_acc``.

What it does: one training epoch of a tiny segmentation head under DDP, then validation on two datasets (4 images of
``cityscapes_val`` and 1 of ``ade_val``) split over the ranks without padding, then the trainer's teardown barrier.

The fix (PR #74, written from the PR's diff excerpt and review comment; the stored snapshot of the repository predates
the merge): ``outputs_by_dl`` is filled out to every configured dataloader index (an empty list where this rank saw
nothing), ``multi`` follows the configured dataset names, and each dataloader's intersect / union / label areas are
sum-reduced over the ranks before the IoU is computed -- the same collectives on every rank, zero local statistics
from a rank without samples -- so the logged values are already global.
"""

from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_CLASSES = 3
DATASETS = {"cityscapes_val": 4, "ade_val": 1}


def make_images(name, n):
    g = torch.Generator().manual_seed(len(name))
    return [(torch.randn(3, 4, 4, generator=g), torch.randint(0, NUM_CLASSES, (4, 4), generator=g)) for _ in range(n)]


class OneFormerPlModel:
    def __init__(self, model, dataset_names):
        self.model = model
        self.dataset_names = dataset_names
        self.validation_step_outputs = {}
        self.logged = {}
        self.status_logging_dict = {}

    def log(self, name, value, sync_dist=False):
        """LightningModule.log(..., on_epoch=True): with sync_dist=True the value would be mean-reduced."""
        t = torch.tensor(float(value), dtype=torch.float64)
        if sync_dist:
            dist.all_reduce(t)
            t /= dist.get_world_size()
        self.logged[name] = float(t)

    def _eval_step(self, image, label):
        with torch.no_grad():
            pred = self.model.module(image.unsqueeze(0)).argmax(dim=1)[0]
        area_intersect = np.zeros(NUM_CLASSES)
        area_union = np.zeros(NUM_CLASSES)
        area_label = np.zeros(NUM_CLASSES)
        for c in range(NUM_CLASSES):
            p, t = pred == c, label == c
            area_intersect[c] = float((p & t).sum())
            area_union[c] = float((p | t).sum())
            area_label[c] = float(t.sum())
        return {"area_intersect": area_intersect, "area_union": area_union, "area_label": area_label}

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        metrics = self._eval_step(*batch)
        self.validation_step_outputs.setdefault(dataloader_idx, []).append(metrics)
        return metrics

    def _reduce_areas(self, intersect, union, label):
        t = torch.tensor(np.stack([intersect, union, label]), dtype=torch.float64)
        dist.all_reduce(t)  # sum over the ranks
        return t[0].numpy(), t[1].numpy(), t[2].numpy()

    def _compute_and_log_metrics(self, outputs_by_dl, dataset_names, prefix=""):
        # Lightning can invoke this hook on a rank that received no samples. Still enter every configured
        # dataloader's collective with zero local statistics so that ranks cannot diverge or deadlock.
        expected_indices = range(len(dataset_names)) if dataset_names is not None else (0,)
        outputs_by_dl = {index: outputs_by_dl.get(index, []) for index in expected_indices}
        multi = dataset_names is not None and len(dataset_names) > 1
        combined_intersect = np.zeros(NUM_CLASSES)
        combined_union = np.zeros(NUM_CLASSES)
        combined_label = np.zeros(NUM_CLASSES)
        for dl_idx in sorted(outputs_by_dl.keys()):
            total_intersect = np.zeros(NUM_CLASSES)
            total_union = np.zeros(NUM_CLASSES)
            total_label = np.zeros(NUM_CLASSES)
            for out in outputs_by_dl[dl_idx]:
                total_intersect += out["area_intersect"]
                total_union += out["area_union"]
                total_label += out["area_label"]
            total_intersect, total_union, total_label = self._reduce_areas(total_intersect, total_union, total_label)
            combined_intersect += total_intersect
            combined_union += total_union
            combined_label += total_label
            if multi:
                ds_name = dataset_names[dl_idx]
                with np.errstate(divide="ignore", invalid="ignore"):
                    iou = total_intersect / total_union
                miou = float(np.nanmean(iou))
                acc = float(total_intersect.sum() / total_label.sum())
                self.log(f"{prefix}mIoU/{ds_name}", miou)
                self.log(f"{prefix}all_acc/{ds_name}", acc)
                self.status_logging_dict[f"mIoU/{ds_name}"] = miou
        with np.errstate(divide="ignore", invalid="ignore"):
            combined_iou = combined_intersect / combined_union
        self.log(f"{prefix}mIoU", float(np.nanmean(combined_iou)))
        self.log(f"{prefix}all_acc", float(combined_intersect.sum() / combined_label.sum()))

    def on_validation_epoch_end(self):
        self._compute_and_log_metrics(self.validation_step_outputs, self.dataset_names)
        self.validation_step_outputs.clear()


def fit(pl_model, optimizer, rank, world):
    train = make_images("train", 8)[rank::world]
    pl_model.model.train()
    for image, label in train:
        loss = nn.functional.cross_entropy(pl_model.model(image.unsqueeze(0)), label.unsqueeze(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    # validation: each dataloader split over the ranks without padding (an unrepeated distributed sampler)
    pl_model.model.eval()
    for dl_idx, (name, n) in enumerate(DATASETS.items()):
        for batch_idx, batch in enumerate(make_images(name, n)[rank::world]):
            pl_model.validation_step(batch, batch_idx, dataloader_idx=dl_idx)
    pl_model.on_validation_epoch_end()
    dist.barrier()  # strategy.barrier("teardown")


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Conv2d(3, NUM_CLASSES, kernel_size=1))
    pl_model = OneFormerPlModel(model, list(DATASETS))
    fit(pl_model, torch.optim.SGD(model.parameters(), lr=0.1), rank, world)
    print(f"[rank {rank}] logged: {', '.join(f'{k}={v:.4f}' for k, v in pl_model.logged.items())}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
