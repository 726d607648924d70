"""Counting input tokens by gathering the padded ``input_ids`` themselves (``include_num_input_tokens_seen``).

Modelled on huggingface/transformers issue #28791 ("Inappropriate reduce operation of 'num_input_tokens_seen'
is prone to get training stuck": ``self.state.num_input_tokens_seen +=
self.gather(inputs[main_input_name]).numel()``; "The length of inputs[main_input_name] is not
guaranteed to be the same when using ddp, which may make the training process hang") and the trainer code it
quotes (PR #27274); fixed by PR #29099. Written here with torch only: DDP stands in for
``accelerator.prepare``, and ``gather()`` follows accelerate's ``utils/operations.py`` gather of one tensor on
gloo (an ``all_gather`` into ``empty_like`` buffers, then ``cat``); a tiny bag-of-embeddings classifier and token
sequences built in code, padded per batch to the batch's longest sequence as a dynamic-padding collator does.

Bug: the gathered tensor is the padded batch, whose width is the longest sequence of that rank's batch: 5
tokens on rank 0 and 9 on rank 1 at the first step, so the ranks all-gather tensors of different sizes.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
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
    dist.all_gather(output, tensor)  # WAITS
    return torch.cat(output, dim=0)


def training_loop(model, opt, batches):
    tokens_seen = 0
    for inputs in batches:
        tokens_seen += gather(inputs["input_ids"]).numel()  # BUG  # WAITS
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
    return training_loop(model, opt, batches)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
