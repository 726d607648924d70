"""Tensor-parallel batch broadcast whose receivers allocate the buffer from the configured sequence length.

Source: modelled on NVIDIA/Megatron-LM ``pretrain_gpt.py`` ``get_batch`` (only tensor-parallel rank 0 reads the data
iterator; ``data = next(data_iterator) if mpu.get_tensor_model_parallel_rank() == 0 else None``) and
``megatron/core/tensor_parallel/data.py`` ``broadcast_data`` (the source first broadcasts the size of every key,
``_build_key_size_numel_dictionaries``, then the flattened data); huggingface/transformers
``DataCollatorWithPadding`` (``padding="longest"``: a batch is padded to its longest sample, not to ``max_length``);
Megatron's ``ColumnParallelLinear`` / ``RowParallelLinear`` (the row-parallel output all-reduced over the
tensor-parallel group).

Two ranks form one tensor-parallel group. The bug: a hand-rolled ``broadcast_data`` skips the size broadcast, and
the receivers allocate ``MICRO_BATCH x MAX_SEQ_LENGTH`` tokens per key, the shape the tokenizer's ``max_length``
promises; the collator pads to the batch's longest sample (7 tokens here). gloo's broadcast delivers the smaller
message into the larger buffer without complaint, so rank 1 unpacks a batch that is silently wrong: its "tokens" are
the first 24 numbers of rank 0's flat message, i.e. both rows of tokens and part of the labels (``-100``). Rank 1
fails in its embedding lookup (``IndexError``) while rank 0 waits in the row-parallel all-reduce of the MLP; had the
labels not been negative, the activations of different widths would have met in that all-reduce.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 32
HIDDEN = 8
FFN = 16
MICRO_BATCH = 2
MAX_SEQ_LENGTH = 12  # the tokenizer's max_length
PAD, IGNORE = 0, -100
KEYS = ("tokens", "labels")


def collate_longest(samples):
    # DataCollatorWithPadding(padding="longest"): pad to the longest sample of this batch
    width = max(len(s) for s in samples)
    tokens = torch.full((len(samples), width), PAD, dtype=torch.int64)
    labels = torch.full((len(samples), width), IGNORE, dtype=torch.int64)
    for row, sample in enumerate(samples):
        tokens[row, :len(sample)] = sample
        labels[row, :len(sample) - 1] = sample[1:]
    return {"tokens": tokens, "labels": labels}


def data_iterator():
    generator = torch.Generator().manual_seed(0)
    while True:
        lengths = torch.randint(3, 8, (MICRO_BATCH,), generator=generator).tolist()
        yield collate_longest([torch.randint(1, VOCAB, (n,), generator=generator) for n in lengths])


def broadcast_data(keys, data, datatype):
    if dist.get_rank() == 0:
        flat = torch.cat([data[k].contiguous().view(-1) for k in keys])
    else:
        flat = torch.zeros(len(keys) * MICRO_BATCH * MAX_SEQ_LENGTH, dtype=datatype)  # BUG
    dist.broadcast(flat, src=0)
    numel = flat.numel() // len(keys)
    return {k: flat[i * numel:(i + 1) * numel].view(MICRO_BATCH, -1) for i, k in enumerate(keys)}


def get_batch(iterator):
    data = next(iterator) if dist.get_rank() == 0 else None  # only tensor-parallel rank 0 reads
    return broadcast_data(KEYS, data, torch.int64)


class _CopyToTensorParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class _ReduceFromTensorParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)  # WAITS
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class ParallelMLP(nn.Module):
    def __init__(self, world):
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, FFN // world)  # ColumnParallelLinear: this rank's output columns
        self.fc2 = nn.Linear(FFN // world, HIDDEN, bias=False)  # RowParallelLinear: this rank's input rows

    def forward(self, x):
        x = _CopyToTensorParallelRegion.apply(x)
        return _ReduceFromTensorParallelRegion.apply(self.fc2(torch.relu(self.fc1(x))))  # WAITS


class TinyGPT(nn.Module):
    def __init__(self, world):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.mlp = ParallelMLP(world)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.out(h + self.mlp(h))  # WAITS


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # replicated layers equal on both ranks
    model = TinyGPT(world)
    torch.manual_seed(1 + rank)  # each rank's own shard of the MLP
    model.mlp = ParallelMLP(world)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    iterator = data_iterator() if rank == 0 else None
    for step in range(3):
        batch = get_batch(iterator)
        logits = model(batch["tokens"])  # WAITS
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), batch["labels"].view(-1), ignore_index=IGNORE)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: tokens {tuple(batch['tokens'].shape)}, loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
