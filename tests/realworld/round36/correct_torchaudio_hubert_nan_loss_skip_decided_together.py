"""torchaudio's HuBERT pre-training recipe with the skip decided together: every rank all-reduces an "invalid loss" flag
(MAX) and, when any rank's loss is inf or NaN, all ranks skip the step -- the fix pytorch/audio issue #3749 points to.

Models: pytorch/audio issue #3749 ("Training Hangs During HuBERT Pretraining with DDP When Loss Becomes Invalid": "In
the code below `return None`, it calls `all_gather` to aggregate `num_frame`. However, if NaN occurs in a specific GPU
process, it never reaches this `all_gather`, causing the training to stall at this point"; the maintainer points at
Lightning issue #5243, skipping a step on one DDP rank). Code modelled (written here, not copied):
``examples/hubert/lightning_modules.py`` -- ``HuBERTPreTrainModule.training_step`` with manual optimization
(``opt.zero_grad()``, ``loss, num_frame = self._step(...)``, the ``isinf``/``isnan`` early return, ``num_frames =
self.all_gather(num_frame)``, the loss scaled by world size over the gathered frame count, ``self.manual_backward``,
``opt.step()``) and ``self.log(..., sync_dist=True)`` at the epoch's end. Stand-ins: Lightning's loop, ``all_gather``
and ``manual_backward`` (DDP's backward), a tiny masked-prediction model over feature frames, and a corrupted utterance
(an ``inf`` sample) in rank 1's second batch. The flag all-reduce is what Lightning issue #5243's thread suggests
for a step skipped on one DDP rank (written here).

Rank 1's second batch gives a NaN loss; the flag tells both ranks, both skip step 1, and both make the same 3 gathers
and 3 backward passes before the epoch-end all-reduce. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_CLASSES = 8


class TinyHuBERT(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 16))
        self.mask_emb = nn.Parameter(torch.zeros(6))
        self.head = nn.Linear(16, NUM_CLASSES)

    def forward(self, feats, mask):
        x = torch.where(mask.unsqueeze(-1), self.mask_emb, feats)
        h = self.encoder(x)
        h = h + h.mean(dim=1, keepdim=True)  # stand-in for the transformer's context over frames
        return self.head(h)


class HuBERTPreTrainModule:
    def __init__(self, model, rank):
        self.model = DDP(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.rank = rank
        self.epoch_losses = []

    def all_gather(self, tensor):
        gathered = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, tensor)
        return torch.stack(gathered)

    def log_epoch(self, name):
        value = torch.tensor(sum(self.epoch_losses) / max(len(self.epoch_losses), 1))
        dist.all_reduce(value)
        return value.item() / dist.get_world_size()

    def _step(self, batch):
        feats, labels, mask = batch
        logits = self.model(feats, mask)
        loss = F.cross_entropy(logits[mask], labels[mask], reduction="sum")
        num_frame = mask.sum()
        return loss, num_frame

    def training_step(self, batch, batch_idx):
        self.optimizer.zero_grad()
        loss, num_frame = self._step(batch)
        invalid = torch.tensor(float(torch.isinf(loss) or torch.isnan(loss)))
        dist.all_reduce(invalid, op=dist.ReduceOp.MAX)
        if invalid.item() > 0:  # some rank's loss is invalid: every rank skips this step
            self.optimizer.zero_grad()
            return None
        # normalise the loss by the number of masked frames over all ranks
        num_frames = self.all_gather(num_frame)
        loss = loss * num_frames.size(0) / num_frames.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 10.0)
        self.optimizer.step()
        self.epoch_losses.append(loss.item())
        return loss


def fit(module, batches):
    for batch_idx, batch in enumerate(batches):
        module.training_step(batch, batch_idx)
    return module.log_epoch("train_loss")


def make_batches(rank, steps=4):
    gen = torch.Generator().manual_seed(300 + rank)
    batches = []
    for step in range(steps):
        feats = torch.randn(3, 10, 6, generator=gen)
        if rank == 1 and step == 1:
            feats[0, 7, 2] = float("inf")  # stand-in: a corrupted utterance
        labels = torch.randint(0, NUM_CLASSES, (3, 10), generator=gen)
        mask = torch.rand(3, 10, generator=gen) < 0.5
        mask[:, 4] = True
        mask[:, 7] = False
        batches.append((feats, labels, mask))
    return batches


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    module = HuBERTPreTrainModule(TinyHuBERT(), rank)
    mean_loss = fit(module, make_batches(rank))
    print(f"[rank {rank}] epoch done, {len(module.epoch_losses)} steps, train_loss {mean_loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
