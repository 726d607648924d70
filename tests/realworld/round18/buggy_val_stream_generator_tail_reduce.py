"""Validation batches from a generator whose post-loop all-reduce only runs where the stream is exhausted.

Models: pytorch/torchtitan ``torchtitan/components/validate.py`` (``Validator.validate``: ``for ... in
self.validation_dataloader: if validation.steps != -1 and num_steps >= validation.steps: break``) together with a
learner's own validation stream written as a generator, as many small training scripts do, and the map-style
``datasets.distributed.split_dataset_by_node`` contract (contiguous chunks, no padding: the ranks' shards differ in
length).

What it does: two ranks train a tiny DDP language model for two epochs. After each epoch they validate on their own
chunk of the validation documents (17 rows: rank 0 gets 9, rank 1 gets 8; batches of 2), capped at ``VAL_STEPS = 4``
batches as torchtitan caps ``validation.steps``. The stream generator ``val_batches`` counts the rows it handed out
and, after its ``for`` loop, all-reduces the count "so rank 0 can log how much of the set was covered".

The bug: code after a generator's loop runs only when the consumer asks for one more item and the generator is
exhausted. Rank 1's stream has exactly 4 batches: the 5th ``next()`` ends the generator and runs the count
all-reduce. Rank 0's stream has 5 batches: the ``break`` on the step cap leaves its generator suspended (and then
closed by garbage collection, which raises ``GeneratorExit`` at the ``yield``), so rank 0 never makes that
all-reduce. Rank 0 goes on to the loss all-reduce after the loop, which pairs with rank 1's count all-reduce
(same shape, silently wrong numbers); rank 1's loss all-reduce then meets rank 0's gradient all-reduce in the next
epoch's ``loss.backward()`` and gloo aborts on the size mismatch (2 values against 1,056).
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 32
SEQ = 8
VAL_STEPS = 4
BATCH = 2


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(self.emb(tokens))


def split_by_node(rows, rank, world_size):
    # contiguous chunks as datasets' split_dataset_by_node gives a map-style dataset: no padding
    per, extra = divmod(len(rows), world_size)
    start = rank * per + min(rank, extra)
    return rows[start:start + per + (1 if rank < extra else 0)]


def val_batches(shard):
    seen = torch.zeros(2)
    for i in range(0, len(shard), BATCH):
        batch = shard[i:i + BATCH]
        seen += torch.tensor([float(len(batch)), 1.0])
        yield batch
    dist.all_reduce(seen)  # BUG
    if dist.get_rank() == 0:
        print(f"validation covered {int(seen[0])} rows in {int(seen[1])} batches")


@torch.no_grad()
def validate(model, shard):
    model.eval()
    totals = torch.zeros(2)
    for step, batch in enumerate(val_batches(shard)):
        if step >= VAL_STEPS:
            break
        logits = model.module(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        totals += torch.tensor([loss.item(), 1.0])
    dist.all_reduce(totals)  # WAITS
    model.train()
    return (totals[0] / totals[1]).item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(TinyLM())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    train_rows = torch.randint(0, VOCAB, (16, SEQ + 1), generator=g)
    val_rows = torch.randint(0, VOCAB, (17, SEQ + 1), generator=g)
    my_train = train_rows[rank::world]
    my_val = split_by_node(val_rows, rank, world)
    for epoch in range(2):
        for i in range(0, len(my_train), BATCH):
            batch = my_train[i:i + BATCH]
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()  # WAITS
            opt.step()
        val_loss = validate(model, my_val)  # WAITS
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss:.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
