"""Speculative-decoding draft training under DDP: a micro-batch whose samples are all too short to hold a
block raises, and the training loop skips it on that rank only.

Source: NVIDIA-NeMo/Automodel PR #2468 ("keep DFlash DDP ranks in lockstep on no-valid-anchor skips"): the
DFlash trainer raises ``NoValidAnchorsError`` when no sample of a micro-batch is long enough to form a block,
and the loop caught it with a per-rank ``continue`` — no backward, so no gradient all-reduce on that rank
while the others run theirs ("the others wait on a reduce that never comes"); the same review finding in
Project-MONAI/monai-physio PR #137 (``if not torch.isfinite(loss): continue`` under DDP). Here: a tiny
next-block predictor wrapped in DDP, four micro-batches of token sequences per rank; rank 1's third
micro-batch holds only short sequences.

The bug: the skip is decided from the rank's own data. Rank 1's backward for its fourth micro-batch pairs
with rank 0's third, and rank 0's fourth backward waits for a gradient all-reduce rank 1 never makes.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
VOCAB = 32
BLOCK = 4


class NoValidAnchorsError(RuntimeError):
    """No sample of the micro-batch is long enough to hold an anchor token and a block after it."""


class DraftHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.predict = torch.nn.Linear(16, BLOCK * VOCAB)

    def forward(self, anchors):
        return self.predict(self.embed(anchors)).view(-1, BLOCK, VOCAB)


def anchors_and_blocks(batch):
    anchors, blocks = [], []
    for sequence in batch:
        if len(sequence) > BLOCK:
            anchors.append(sequence[0])
            blocks.append(sequence[1 : BLOCK + 1])
    if not anchors:
        raise NoValidAnchorsError(f"no sequence of the micro-batch is longer than {BLOCK} tokens")
    return torch.stack(anchors), torch.stack(blocks)


def micro_batches(rank, generator):
    """Four micro-batches of three sequences; rank 1's third one has only sequences of 2-3 tokens."""
    batches = []
    for step in range(4):
        lengths = [2, 3, 3] if (rank, step) == (1, 2) else [6, 3, 8]
        batches.append([torch.randint(VOCAB, (n,), generator=generator) for n in lengths])
    return batches


def train(model, optimizer, batches):
    losses = []
    for batch in batches:
        try:
            anchors, blocks = anchors_and_blocks(batch)
        except NoValidAnchorsError:
            continue  # BUG
        logits = model(anchors)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), blocks.reshape(-1))
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        losses.append(loss.item())
    return losses


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(DraftHead())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(7 + rank)
    return train(model, optimizer, micro_batches(rank, generator))  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
