"""Modelled on pytorch/torchtitan issue #1618 / PR #1617 ("Validation loop hangs": the log shows rank 1 at
batch 89 and rank 0 at batch 87 when the job stops, "related to the dataloader/sharding in FSDP"),
PrimeIntellect-ai/prime-rl issue #2515 / PR #2636 (SFT validation deadlocks with FSDP "when ranks see different
numbers of variable-length packed batches": the first rank out reaches the post-loop ``all_reduce`` "while others
are still inside an FSDP all-gather") and torchtitan's ``components/validate.py`` (loss summed over tokens,
all-reduced after the loop). The model is sharded with FSDP2 ``fully_shard`` on a CPU mesh, so every forward
all-gathers the parameters.

The bug: the validation pass stops after a token budget, and each rank counts its own real (non-padding) target
tokens against its share of the budget. The ranks' documents have different lengths, so rank 0 reaches its share
after 3 batches, rank 1 after 4: rank 0 goes to the post-loop ``all_reduce`` of the totals while rank 1 is in its
fourth forward's parameter all-gather. On gloo the mismatched calls end in rank 1's 20 s timeout and a closed
connection on rank 0; on NCCL the issues report a hang.

Correct twin: ``correct_eval_token_budget_global_count`` (the count goes through an all-reduce every batch).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 32
SEQ = 16
PAD = -100


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.block = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU())
        self.head = torch.nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(self.block(self.embed(tokens)))  # WAITS


def validation_batches(rank, count=8, batch_size=2):
    """Packed documents of random length, padded to SEQ: this rank's shard of the validation set."""
    generator = torch.Generator().manual_seed(1234 + rank)
    for _ in range(count):
        inputs = torch.randint(0, VOCAB, (batch_size, SEQ), generator=generator)
        labels = inputs.roll(-1, dims=1)
        lengths = torch.randint(3, SEQ, (batch_size,), generator=generator)
        labels[torch.arange(SEQ) >= lengths.unsqueeze(1)] = PAD
        yield inputs, labels


def validate(model, batches, eval_tokens):
    model.eval()
    loss_sum = torch.zeros(1)
    tokens_seen = 0  # this rank's
    with torch.no_grad():
        for inputs, labels in batches:
            logits = model(inputs)  # WAITS
            loss_sum += torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), labels.flatten(), ignore_index=PAD, reduction="sum")
            tokens_seen += int((labels != PAD).sum())
            if tokens_seen >= eval_tokens // dist.get_world_size():  # BUG
                break
    totals = torch.cat([loss_sum, torch.tensor([float(tokens_seen)])])
    dist.all_reduce(totals)  # WAITS
    model.train()
    return (totals[0] / totals[1]).item(), int(totals[1])


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = TinyLM()
    fully_shard(model.block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    loss, tokens = validate(model, validation_batches(rank), eval_tokens=80)  # WAITS
    if rank == 0:
        print(f"validation loss {loss:.4f} over {tokens} tokens")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
