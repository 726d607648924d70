"""JOTR's contrastive (NCE) loss under DDP, with missing samples replaced so every batch keeps its size.

Models: xljh0520/JOTR issue #4 ("NCCL Timeout Error when applying NCE Loss"; the reporter's own diagnosis: "it is the
incompleteness of my dataset cause this error. I have set ``collect_fn`` parameter in ``dataloader`` in order to deal
with the missing data, but this will cause a stuck when conducting the allgather operation", with
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` showing ``ALLGATHER`` of ``[41, 256, 8, 8, 8]`` on rank 0 and ``[40, ...]`` on rank
1; the thread cites the PyTorch forum thread "all_gather get stuck when data samples are not the same length").
Code modelled (written here, not copied): a DDP training step whose loss adds an InfoNCE term over the features of
the whole global batch -- each rank's features gathered with ``dist.all_gather`` into a list of
``torch.zeros_like(feat)`` buffers, its own slot replaced by the local tensor to keep the gradient -- and a
``collate_fn`` that filters out the ``None`` a dataset returns for a sample whose file cannot be read.

The fix modelled is written from the reporter's diagnosis (their own suggested fix is cut off in the stored thread):
the dataset replaces a sample whose file is missing with the next readable one instead of letting ``collate_fn`` drop
it, so every batch keeps 4 samples and the ranks gather features of one size. Rank 1's shard still has the missing
file. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

BATCH_SIZE = 4
MISSING = {(1, 5)}


class MeshDataset:
    def __init__(self, rank):
        self.rank = rank
        gen = torch.Generator().manual_seed(rank)
        self.items = [torch.randn(16, generator=gen) for _ in range(12)]

    def __len__(self):
        return len(self.items)

    def load(self, i):
        if (self.rank, i) in MISSING:
            return None
        return self.items[i]

    def __getitem__(self, i):
        sample = self.load(i)
        while sample is None:
            i = (i + 1) % len(self.items)
            sample = self.load(i)
        return sample


def collate_fn(samples):
    return torch.stack(samples)


def batches(dataset):
    for i in range(0, len(dataset), BATCH_SIZE):
        yield collate_fn([dataset[j] for j in range(i, i + BATCH_SIZE)])


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))
        self.regressor = nn.Linear(32, 3)

    def forward(self, x):
        feat = self.backbone(x)
        return feat, self.regressor(feat)


def gather_features(feat):
    gathered = [torch.zeros_like(feat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, feat.detach())
    gathered[dist.get_rank()] = feat
    return torch.cat(gathered)


def nce_loss(feat, temperature=0.1):
    all_feat = F.normalize(gather_features(feat), dim=1)
    local = F.normalize(feat, dim=1)
    logits = local @ all_feat.t() / temperature
    offset = dist.get_rank() * feat.shape[0]
    targets = torch.arange(feat.shape[0]) + offset
    return F.cross_entropy(logits, targets)


def train_epoch(model, opt, dataset):
    for x in batches(dataset):
        feat, pred = model(x)
        loss = F.mse_loss(pred, x[:, :3]) + 0.1 * nce_loss(feat)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(Encoder())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dataset = MeshDataset(rank)
    for epoch in range(2):
        loss = train_epoch(model, opt, dataset)
        print(f"[rank {rank}] epoch {epoch}: loss {loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
