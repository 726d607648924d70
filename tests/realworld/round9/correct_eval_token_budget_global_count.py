"""Modelled on PrimeIntellect-ai/prime-rl PR #2636 ("fix(sft): sync validation iteration to prevent FSDP deadlock":
"Under FSDP, each forward is a collective (param all-gather)"; the ranks see different numbers of variable-length
packed batches; the fix agrees on leaving the loop with a per-batch ``all_reduce``), pytorch/torchtitan issue #1618
("Validation loop hangs", ranks at different batch numbers) and torchtitan's ``components/validate.py``
(``Validator.validate``: a loop over the validation dataloader, ``steps`` limit, loss summed over tokens and
all-reduced after the loop). The model is sharded with FSDP2 ``fully_shard`` on a CPU mesh, so every forward
all-gathers the parameters.

What it does: the validation pass stops after a token budget (``eval_tokens``), counted in real (non-padding)
target tokens. Each rank's batches hold documents of different lengths, so the ranks count different numbers of
tokens per batch. Every batch, the ranks all-reduce their token count and add the global count; all leave the loop
at the same batch, then all-reduce the loss sum and token total.

Why it looks suspicious but is right: a data-dependent ``break`` inside a loop whose body is a collective (the
FSDP forward); the condition reads a count that went through an all-reduce, so it is equal on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

KIND = "correct"
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
        return self.head(self.block(self.embed(tokens)))


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
    tokens_seen = 0  # over all ranks
    with torch.no_grad():
        for inputs, labels in batches:
            logits = model(inputs)
            loss_sum += torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), labels.flatten(), ignore_index=PAD, reduction="sum")
            batch_tokens = torch.tensor([(labels != PAD).sum().item()])
            dist.all_reduce(batch_tokens)
            tokens_seen += int(batch_tokens)
            if tokens_seen >= eval_tokens:
                break
    dist.all_reduce(loss_sum)
    model.train()
    return (loss_sum / tokens_seen).item(), tokens_seen


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = TinyLM()
    fully_shard(model.block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    loss, tokens = validate(model, validation_batches(rank), eval_tokens=80)
    if rank == 0:
        print(f"validation loss {loss:.4f} over {tokens} tokens")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
