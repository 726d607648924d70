"""MedARC fMRI-reconstruction-NSD (voxel2clip) -- validation on local rank 0 only, with the contrastive loss in its
local mode (commit 712bbbd).

Source: MedARC-AI/fMRI-reconstruction-NSD PR #9 ("Fix DDP hang in voxel2clip ...": "Fix a bug where voxel2clip hangs
inside mixco loss when using DDP during validation (set ``distributed=False`` there)"), commit 712bbbd ("Fix hang in
mixco with DDP"). Modelled on ``src/train_voxel2clip.py`` (the epoch loop: training on every rank with
``distributed=distributed``, validation under ``if local_rank==0:`` through ``voxel2clip.module``, ``dist.barrier()``
at the end of every epoch) and ``src/utils.py`` (``mixco``, ``mixco_nce``, ``soft_clip_loss``, ``gather_features``:
``torch.cat(torch.distributed.nn.all_gather(...))``, which every rank must join).

What it does: a voxel-to-CLIP-embedding model (here a small MLP on random "voxels"; the CLIP image embeddings are a
fixed random projection) trains under DDP with MixCo for the first half of the epochs and a soft CLIP loss after, both
contrasting each rank's predictions against the targets gathered from all ranks. After each epoch local rank 0 runs
validation, then every rank meets in the end-of-epoch barrier.

The fix (commit 712bbbd / PR #9): both validation losses are called with ``distributed=False`` ("always false
otherwise DDP hangs here"), so rank 0's validation makes no collective and every rank meets next in the
end-of-epoch barrier.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.nn
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_VOXELS, CLIP_DIM = 32, 16
BATCH_SIZE = 6
NUM_EPOCHS = 2
MIXUP_PCT = 0.5


def gather_features(image_features):
    return torch.cat(torch.distributed.nn.all_gather(image_features), dim=0)


def mixco(voxels, beta=0.15, s_thresh=0.5):
    perm = torch.randperm(voxels.shape[0])
    voxels_shuffle = voxels[perm]
    betas = torch.distributions.Beta(beta, beta).sample([voxels.shape[0]])
    select = torch.rand(voxels.shape[0]) <= s_thresh
    voxels = voxels.clone()
    voxels[select] = voxels[select] * betas[select].reshape(-1, 1) + voxels_shuffle[select] * (1 - betas[select]).reshape(-1, 1)
    betas[~select] = 1
    return voxels, perm, betas, select


def mixco_nce(preds, targs, temp=0.1, perm=None, betas=None, select=None, distributed=False, local_rank=None):
    if distributed:
        all_targs = gather_features(targs)
        brain_clip = (preds @ all_targs.T) / temp
    else:
        brain_clip = (preds @ targs.T) / temp
    if perm is not None and betas is not None and select is not None:
        probs = torch.diag(betas)
        probs[torch.arange(preds.shape[0]), perm] = 1 - betas
        if distributed:
            probs_all = torch.zeros_like(brain_clip)
            probs_all[:, local_rank * brain_clip.shape[0]:(local_rank + 1) * brain_clip.shape[0]] = probs
            probs = probs_all
        return -(brain_clip.log_softmax(-1) * probs).sum(-1).mean()
    return F.cross_entropy(brain_clip, torch.arange(brain_clip.shape[0]))


def soft_clip_loss(preds, targs, temp=0.125, distributed=False):
    if not distributed:
        clip_clip = (targs @ targs.T) / temp
        brain_clip = (preds @ targs.T) / temp
    else:
        all_targs = gather_features(targs)
        clip_clip = (targs @ all_targs.T) / temp
        brain_clip = (preds @ all_targs.T) / temp
    loss1 = -(brain_clip.log_softmax(-1) * clip_clip.softmax(-1)).sum(-1).mean()
    loss2 = -(brain_clip.T.log_softmax(-1) * clip_clip.T.softmax(-1)).sum(-1).mean()
    return (loss1 + loss2) / 2


def make_loaders(local_rank, world):
    g = torch.Generator().manual_seed(42)
    clip_proj = torch.randn(NUM_VOXELS, CLIP_DIM, generator=g)
    voxels = torch.randn(4 * BATCH_SIZE, NUM_VOXELS, generator=g)
    train = [(v, v @ clip_proj) for v in voxels.split(BATCH_SIZE)][local_rank::world]  # webdataset shards per rank
    val_voxels = torch.randn(2 * BATCH_SIZE, NUM_VOXELS, generator=g)
    val = [(v, v @ clip_proj) for v in val_voxels.split(BATCH_SIZE)]
    return train, val


def train_voxel2clip(distributed=True):
    local_rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    voxel2clip = DDP(nn.Sequential(nn.Linear(NUM_VOXELS, 64), nn.GELU(), nn.Linear(64, CLIP_DIM)))
    optimizer = torch.optim.AdamW(voxel2clip.parameters(), lr=1e-3)
    torch.manual_seed(local_rank)  # utils.seed_everything(local_rank)
    train_dl, val_dl = make_loaders(local_rank, world)
    soft_loss_temps = [0.004, 0.0075]

    for epoch in range(NUM_EPOCHS):
        voxel2clip.train()
        losses = []
        for voxel, clip_target in train_dl:
            optimizer.zero_grad()
            if epoch < int(MIXUP_PCT * NUM_EPOCHS):
                voxel, perm, betas, select = mixco(voxel)
            clip_voxels = voxel2clip(voxel)
            if epoch < int(MIXUP_PCT * NUM_EPOCHS):
                loss = mixco_nce(F.normalize(clip_voxels, dim=-1), F.normalize(clip_target, dim=-1), temp=0.006,
                                 perm=perm, betas=betas, select=select, distributed=distributed, local_rank=local_rank)
            else:
                loss = soft_clip_loss(F.normalize(clip_voxels, dim=-1), F.normalize(clip_target, dim=-1),
                                      temp=soft_loss_temps[epoch - int(MIXUP_PCT * NUM_EPOCHS)], distributed=distributed)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        if local_rank == 0:
            voxel2clip.eval()
            val_losses = []
            for voxel, clip_target in val_dl:
                with torch.no_grad():
                    clip_voxels = voxel2clip.module(voxel)
                    if epoch < int(MIXUP_PCT * NUM_EPOCHS):
                        loss = mixco_nce(F.normalize(clip_voxels, dim=-1), F.normalize(clip_target, dim=-1),
                                         temp=0.006, distributed=False)  # always false otherwise DDP hangs here
                    else:
                        loss = soft_clip_loss(F.normalize(clip_voxels, dim=-1), F.normalize(clip_target, dim=-1),
                                              temp=soft_loss_temps[epoch - int(MIXUP_PCT * NUM_EPOCHS)],
                                              distributed=False)  # always false otherwise DDP hangs here
                    val_losses.append(loss.item())
            print(f"[rank 0] epoch {epoch}: train loss {sum(losses) / len(losses):.4f}, "
                  f"val loss {sum(val_losses) / len(val_losses):.4f}")
        if distributed:
            dist.barrier()
    return voxel2clip


def worker():
    train_voxel2clip(distributed=True)
    print(f"[rank {dist.get_rank()}] finished")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
