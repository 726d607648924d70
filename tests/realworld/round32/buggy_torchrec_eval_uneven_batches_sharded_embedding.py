"""TorchRec under Lightning: validation over per-rank shards with different numbers of batches through a sharded model.

Models: meta-pytorch/torchrec issue #1014 ("NCCL Timeout if Number of Batches are not same per rank for Eval mode":
a ``DistributedModelParallel`` model in a ``LightningModule`` following torchrecipes' ``rec`` example "hangs till
NCCL timeout if number of batches are different during **validation** stage. I know #Batches should be same for
training mode, while it does not make sense for eval mode"). The cause the report identifies: every forward of the
sharded model is a collective, in evaluation as in training. Code modelled (written here, not copied): the
reporter's ``ShardedModelWrapper`` (``DistributedModelParallel`` over the model, ``TrainPipelineSparseDist`` per
stage, ``validation_step`` driving the val pipeline), TorchRec's table-wise sharded ``EmbeddingBagCollection``
(the input distribution -- an all-to-all sending each feature's ids to the rank that owns its table --, the local
lookup, the output all-to-all back), Lightning's validation loop and ``on_validation_epoch_end`` with a metric whose
states are summed across ranks.

2 ranks, two embedding tables (``user`` on rank 0, ``item`` on rank 1), a dense tower, batches of 4. Training runs on
equal shards (3 batches each); the evaluation files give rank 0 20 rows (5 batches) and rank 1 16 rows (4 batches).
Rank 1 leaves the loop after batch 4 and waits in the metric's all-reduce; rank 0 waits in batch 5's input
all-to-all.
Bug: the validation loop over the rank's own, unequal number of batches (BUG); waiting: rank 0 in the sharded
forward's all-to-all, rank 1 in the metric sync (WAITS).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

BATCH_SIZE = 4
EMB_DIM = 8
NUM_EMBEDDINGS = 50
FEATURES = ["user", "item"]
TRAIN_ROWS = {0: 12, 1: 12}
EVAL_ROWS = {0: 20, 1: 16}


class ShardedEmbeddingBagCollection(nn.Module):
    """Table-wise sharding: the table of feature ``f`` lives on rank ``f``."""

    def __init__(self, rank):
        super().__init__()
        torch.manual_seed(100 + rank)
        self.rank = rank
        self.local_table = nn.Embedding(NUM_EMBEDDINGS, EMB_DIM)

    def forward(self, ids):
        # ids: (batch, num_features); column f goes to the owner of table f
        send = ids.t().contiguous().reshape(-1)
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)  # WAITS
        pooled = self.local_table(recv).detach().requires_grad_(False)
        back = torch.empty_like(pooled)
        dist.all_to_all_single(back, pooled.contiguous())
        return back.reshape(len(FEATURES), ids.shape[0], EMB_DIM).permute(1, 0, 2).reshape(ids.shape[0], -1)


class DistributedModelParallel(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.sparse_arch = ShardedEmbeddingBagCollection(rank)
        torch.manual_seed(0)
        self.over_arch = nn.Sequential(nn.Linear(len(FEATURES) * EMB_DIM + 3, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, ids):
        return self.over_arch(torch.cat([dense, self.sparse_arch(ids)], dim=1)).squeeze(-1)  # WAITS


def make_rows(rank, n, salt):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    dense = torch.randn(n, 3, generator=g)
    ids = torch.randint(0, NUM_EMBEDDINGS, (n, len(FEATURES)), generator=g)
    labels = (dense.sum(-1) > 0).float()
    return [(dense[i : i + BATCH_SIZE], ids[i : i + BATCH_SIZE], labels[i : i + BATCH_SIZE])
            for i in range(0, n, BATCH_SIZE)]


class ShardedModelWrapper:
    """The LightningModule: training and validation steps through the sharded model."""

    def __init__(self, rank):
        self.rank = rank
        self.dist_model = DistributedModelParallel(rank)
        self.optimizer = torch.optim.SGD(self.dist_model.over_arch.parameters(), lr=0.1)
        self.loss = nn.BCEWithLogitsLoss()
        self.val_correct = torch.zeros(2)

    def training_step(self, batch):
        dense, ids, labels = batch
        loss = self.loss(self.dist_model(dense, ids), labels)
        loss.backward()
        for p in self.dist_model.over_arch.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.item()

    def validation_step(self, batch):
        dense, ids, labels = batch
        with torch.no_grad():
            preds = (self.dist_model(dense, ids) > 0).float()  # WAITS
        valid = labels >= 0
        self.val_correct += torch.tensor([(preds == labels)[valid].sum().item(), float(valid.sum())])

    def on_validation_epoch_end(self):
        dist.all_reduce(self.val_correct)  # WAITS
        acc = (self.val_correct[0] / self.val_correct[1]).item()
        self.val_correct.zero_()
        return acc


def fit(module):
    rank = module.rank
    for batch in make_rows(rank, TRAIN_ROWS[rank], salt=1):
        loss = module.training_step(batch)
    print(f"[rank {rank}] train epoch done, loss {loss:.4f}", flush=True)
    val_batches = make_rows(rank, EVAL_ROWS[rank], salt=2)
    for batch in val_batches:  # BUG
        module.validation_step(batch)  # WAITS
    acc = module.on_validation_epoch_end()  # WAITS
    print(f"[rank {rank}] val accuracy {acc:.3f}", flush=True)


def worker():
    module = ShardedModelWrapper(dist.get_rank())
    fit(module)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
