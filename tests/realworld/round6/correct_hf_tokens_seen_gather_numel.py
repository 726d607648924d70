"""Counting input tokens by gathering each rank's token count (the fix of ``num_input_tokens_seen``).

Modelled on huggingface/transformers PR #29099 ("Fix the behavior of collecting 'num_input_tokens_seen'": take
``.numel()`` first and gather a one-element int64 tensor, then sum), fixing issue #28791; the trainer's
``include_num_input_tokens_seen`` path. Written here with torch only: DDP stands in for ``accelerator.prepare``,
and ``gather()`` follows accelerate's gather of one tensor on gloo (an ``all_gather`` into ``empty_like``
buffers, then ``cat``); a tiny bag-of-embeddings classifier and token sequences built in code, padded per batch
to the batch's longest sequence.

Looks suspicious: the padded batches have different widths on the two ranks (5 and 9 tokens at the first
step) and the count differs per rank, but what is gathered is a one-element tensor of the same shape and dtype
on every rank, once per step on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 32
PAD = 0


def make_sequences(rank, n=8):
    gen = torch.Generator().manual_seed(11 + rank)
    longest = 5 if rank == 0 else 9
    lengths = [longest] + [int(torch.randint(2, longest + 1, (1,), generator=gen)) for _ in range(n - 1)]
    return [torch.randint(1, VOCAB, (length,), generator=gen) for length in lengths]


def collate(seqs):
    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), PAD)
    for i, s in enumerate(seqs):
        input_ids[i, :len(s)] = s
    labels = torch.tensor([int(s.sum()) % 2 for s in seqs])
    return {"input_ids": input_ids, "labels": labels}


class BagClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.EmbeddingBag(VOCAB, 8, mode="mean", padding_idx=PAD)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, input_ids):
        return self.head(self.emb(input_ids))


def gather(tensor):
    """accelerate's gather of one tensor across processes, as on gloo: all_gather + cat."""
    if tensor.ndim == 0:
        tensor = tensor.clone()[None]
    output = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(output, tensor)
    return torch.cat(output, dim=0)


def training_loop(model, opt, batches):
    tokens_seen = 0
    for inputs in batches:
        numel = torch.tensor(inputs["input_ids"].numel(), dtype=torch.int64)
        tokens_seen += int(torch.sum(gather(numel)))
        loss = torch.nn.functional.cross_entropy(model(inputs["input_ids"]), inputs["labels"])
        loss.backward()
        opt.step()
        opt.zero_grad()
    return tokens_seen


def worker():
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(BagClassifier())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seqs = make_sequences(dist.get_rank())
    batches = [collate(seqs[i:i + 4]) for i in range(0, len(seqs), 4)]
    seen = training_loop(model, opt, batches)
    if dist.get_rank() == 0:
        print(f"num_input_tokens_seen {seen}")
    return seen


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
