"""Lightning DDP: validation outputs of different lengths (4 rows on rank 0, 3 on rank 1) gathered the way issue #7773
proposes -- gather the shapes, pad to the largest, gather, cut the padding off.

Models: Lightning-AI/pytorch-lightning issue #7773 ("Enable all_gather to work for Tensors with different shapes along
the first dimension": "Currently, if tensors passed to `all_gather` are of different dimensions on different devices,
the code freezes and GPU spikes to 100%, this is both not obvious and very annoying. Since not error is give, it is
also difficult to debug"; the proposed fix gathers the shapes, pads every tensor to the largest, gathers, and cuts the
padding off). Code modelled (written here, not copied): ``LightningModule.all_gather`` ->
``all_gather_ddp_if_available`` -> ``AllGatherGrad`` (``torch.distributed.all_gather`` into ``[torch.zeros_like(tensor)
for _ in range(world_size)]``), a validation loop over an ``UnrepeatedDistributedSampler``-style split (indices
``rank::world_size``, no padding: 7 samples give 4 and 3) and an ``on_validation_epoch_end`` that gathers every rank's
embeddings to score retrieval over the whole validation set (issue #3915's use case). Stand-ins: Lightning's loop and
a tiny embedding model under DDP.

After one training epoch both ranks gather their row counts (4 and 3), pad to 4 rows, gather, and keep 4 + 3 = 7
embeddings: every rank scores the whole validation set. 2 ranks.
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


def all_gather_ddp_if_available(tensor):
    gathered = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor)
    return torch.stack(gathered)


def all_gather_different_size(t, all_gather_func):
    shape = torch.tensor(t.shape)
    shapes = all_gather_func(shape)
    max_shape = torch.max(shapes, dim=0)[0]
    template = torch.zeros([int(d) for d in max_shape], dtype=t.dtype)
    template[: len(t)] = t
    template = all_gather_func(template)
    return [d[: s[0]] for d, s in zip(template, shapes)]


class RetrievalModule:
    def __init__(self):
        torch.manual_seed(0)
        self.model = DDP(nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 4)))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.validation_step_outputs = []

    def all_gather(self, tensor):
        return all_gather_ddp_if_available(tensor)

    def training_step(self, x, y):
        emb = F.normalize(self.model(x), dim=-1)
        logits = emb @ emb.T / 0.5
        return F.cross_entropy(logits, y)

    def validation_step(self, x, idx):
        with torch.no_grad():
            self.validation_step_outputs.append(F.normalize(self.model.module(x), dim=-1))

    def on_validation_epoch_end(self):
        local = torch.cat(self.validation_step_outputs)
        all_emb = torch.cat(all_gather_different_size(local, self.all_gather))
        sims = all_emb @ all_emb.T
        sims.fill_diagonal_(-1.0)
        self.scored = len(all_emb)
        self.validation_step_outputs.clear()
        return sims.max(dim=1).values.mean().item()


def fit(module, train_batches, val_set):
    rank, world = dist.get_rank(), dist.get_world_size()
    for x, y in train_batches:
        loss = module.training_step(x, y)
        module.optimizer.zero_grad()
        loss.backward()
        module.optimizer.step()
    for idx in range(rank, len(val_set), world):  # UnrepeatedDistributedSampler: no padding
        module.validation_step(val_set[idx : idx + 1], idx)
    return module.on_validation_epoch_end()


def worker():
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(20 + rank)
    train_batches = [(torch.randn(4, 6, generator=gen), torch.arange(4)) for _ in range(3)]
    val_set = torch.randn(7, 6, generator=torch.Generator().manual_seed(99))
    module = RetrievalModule()
    score = fit(module, train_batches, val_set)
    print(f"[rank {rank}] validation: mean best similarity {score:.4f} over {module.scored} of {len(val_set)} samples", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
