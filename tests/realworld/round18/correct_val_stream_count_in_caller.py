"""Validation batches from a generator, capped at a step count, with the coverage count made by the caller.

Models: pytorch/torchtitan ``torchtitan/components/validate.py`` (``Validator.validate`` loops over the validation
loader and ``break``s once ``num_steps >= validation.steps``; the loss is reduced after the loop) and the map-style
``datasets.distributed.split_dataset_by_node`` contract (contiguous chunks without padding, so the ranks' shards
differ in length).

What it does: two ranks train a tiny DDP language model for two epochs and validate after each one on their own
chunk of 17 validation rows (rank 0: 9, rank 1: 8; batches of 2), capped at ``VAL_STEPS = 4`` batches. The stream
generator only yields. ``validate`` counts the rows and batches it actually consumed and reduces them together with
the loss in one all-reduce after the loop, which every rank reaches whether its generator ran out (rank 1) or was
left suspended by the ``break`` (rank 0). Correct: both ranks make the same collectives in the same order.
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
    per, extra = divmod(len(rows), world_size)
    start = rank * per + min(rank, extra)
    return rows[start:start + per + (1 if rank < extra else 0)]


def val_batches(shard):
    for i in range(0, len(shard), BATCH):
        yield shard[i:i + BATCH]


@torch.no_grad()
def validate(model, shard):
    model.eval()
    totals = torch.zeros(3)  # loss sum, batches, rows
    for step, batch in enumerate(val_batches(shard)):
        if step >= VAL_STEPS:
            break
        logits = model.module(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        totals += torch.tensor([loss.item(), 1.0, float(len(batch))])
    dist.all_reduce(totals)
    if dist.get_rank() == 0:
        print(f"validation covered {int(totals[2])} rows in {int(totals[1])} batches")
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
            loss.backward()
            opt.step()
        val_loss = validate(model, my_val)
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss:.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
