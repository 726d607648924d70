"""Tensor-parallel batch broadcast that sends the sizes of every key first, as Megatron's ``broadcast_data`` does.

Source: modelled on NVIDIA/Megatron-LM ``pretrain_gpt.py`` ``get_batch`` (only tensor-parallel rank 0 reads the data
iterator) and ``megatron/core/tensor_parallel/data.py`` ``broadcast_data`` / ``_build_key_size_numel_dictionaries``
(the source packs each key's sizes into a fixed-length integer tensor, broadcasts it, and every rank allocates the
flattened buffer from those sizes); huggingface/transformers ``DataCollatorWithPadding`` (``padding="longest"``);
Megatron's ``ColumnParallelLinear`` / ``RowParallelLinear``.

Two ranks form one tensor-parallel group. Correct, though it looks suspicious: only rank 0 touches the data
iterator (``None`` elsewhere), the batch width changes from step to step and is known on rank 0 only, and the
receivers allocate with ``torch.empty``; the width reaches them in the first broadcast, so every rank allocates the
same number of elements the source sends.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

KIND = "correct"
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


MAX_DIM = 4


def _build_key_size_numel_dictionaries(keys, data):
    sizes = torch.zeros(len(keys) * MAX_DIM, dtype=torch.int64)
    if dist.get_rank() == 0:
        for i, key in enumerate(keys):
            for j, size in enumerate(data[key].shape):
                sizes[i * MAX_DIM + j] = size
    dist.broadcast(sizes, src=0)
    key_size, key_numel = {}, {}
    for i, key in enumerate(keys):
        shape = [int(s) for s in sizes[i * MAX_DIM:(i + 1) * MAX_DIM] if s > 0]
        key_size[key] = shape
        key_numel[key] = int(torch.tensor(shape).prod())
    return key_size, key_numel, sum(key_numel.values())


def broadcast_data(keys, data, datatype):
    key_size, key_numel, total_numel = _build_key_size_numel_dictionaries(keys, data)
    if dist.get_rank() == 0:
        flat = torch.cat([data[k].contiguous().view(-1) for k in keys])
    else:
        flat = torch.empty(total_numel, dtype=datatype)
    dist.broadcast(flat, src=0)
    output, offset = {}, 0
    for key in keys:
        output[key] = flat[offset:offset + key_numel[key]].view(key_size[key])
        offset += key_numel[key]
    return output


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
        dist.all_reduce(x)
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
        return _ReduceFromTensorParallelRegion.apply(self.fc2(torch.relu(self.fc1(x))))


class TinyGPT(nn.Module):
    def __init__(self, world):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.mlp = ParallelMLP(world)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.out(h + self.mlp(h))


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
        logits = model(batch["tokens"])
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), batch["labels"].view(-1), ignore_index=IGNORE)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: tokens {tuple(batch['tokens'].shape)}, loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
