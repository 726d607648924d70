"""litgpt: `pretrain.validate` on a rank whose validation shard has no batches.

Source: Lightning-AI/litgpt issue #2319 ("litgpt pretrain crashes or deadlocks when a rank's val_dataloader yields
zero batches (multi-GPU FSDP)", 2026-09) and PR #2321 ("fix: keep pretrain validate lockstep on empty ranks").
Modelled: `litgpt/pretrain.py` `validate()` -- `fabric.barrier()`, `for k, batch in enumerate(val_dataloader)`,
`logits = model(input_ids)`, `losses.append(loss)`, `val_loss = torch.stack(losses).mean()`, `fabric.barrier()`
-- with an FSDP-style model whose forward all-gathers its sharded weight, as every FSDP forward does.

The PR describes the failure: "multi-GPU FSDP deadlock / crash in pretrain.validate when some ranks get zero
validation batches (sharded streaming)". The validation set is a single two-sequence chunk, so rank 0 holds two
batches and rank 1 none: rank 1 never enters the loop and `torch.stack([])` raises, while rank 0 waits in its
first forward's all-gather.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, SEQ = 5, 4
VAL_CHUNKS = [[[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]]  # one chunk of two sequences of SEQ + 1 tokens


class ShardedLM(torch.nn.Module):
    """Each rank keeps a flat shard of the output projection; forward all-gathers it (FSDP unshard)."""

    max_seq_length = SEQ

    def __init__(self, rank, world_size):
        super().__init__()
        torch.manual_seed(0)
        full = torch.randn(VOCAB * VOCAB)
        shard = full.numel() // world_size + 1
        padded = torch.zeros(shard * world_size)
        padded[: full.numel()] = full
        self.world_size = world_size
        self.flat_shard = torch.nn.Parameter(padded[rank * shard:(rank + 1) * shard].clone())

    def forward(self, input_ids):
        shards = [torch.zeros_like(self.flat_shard) for _ in range(self.world_size)]
        dist.all_gather(shards, self.flat_shard.detach())  # WAITS
        weight = torch.cat(shards)[: VOCAB * VOCAB].view(VOCAB, VOCAB)
        return F.one_hot(input_ids, VOCAB).float() @ weight


def val_dataloader(rank, world_size):
    my_chunks = VAL_CHUNKS[rank::world_size]  # sharded streaming: chunks go to ranks
    return [torch.tensor([seq]) for chunk in my_chunks for seq in chunk]


@torch.no_grad()
def validate(model, val_loader, max_iters):
    dist.barrier()  # fabric.barrier()
    model.eval()
    losses = []
    for k, batch in enumerate(val_loader):
        if k >= max_iters:
            break
        input_ids = batch[:, 0: model.max_seq_length].contiguous().long()
        targets = batch[:, 1: (model.max_seq_length + 1)].contiguous().long()
        logits = model(input_ids)  # WAITS
        losses.append(F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1)))
    val_loss = torch.stack(losses).mean()  # BUG
    model.train()
    dist.barrier()  # fabric.barrier()
    return val_loss


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = ShardedLM(rank, world_size)
    loader = val_dataloader(rank, world_size)
    print(f"[rank {rank}] {len(loader)} validation batches", flush=True)
    val_loss = validate(model, loader, max_iters=10)  # WAITS
    print(f"[rank {rank}] val loss {val_loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
