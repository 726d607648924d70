"""Per-rank data-loader state saved with ``torch.distributed.checkpoint`` under a key naming the rank.

Modelled on pytorch/torchtitan ``torchtitan/components/dataloader.py`` (``ParallelAwareDataloader``: the state is
stored under ``self._rank_id = f"dp_rank_{dp_rank}"``, "to avoid replicating the same state across other
dimensions", and ``load_state_dict`` reads that key back), ``torchtitan/datasets/hf_datasets.py``
(``HuggingFaceDataset``: documents packed into ``seq_len + 1`` token chunks, ``state_dict()`` returns
``{"sample_idx": ..., "token_buffer": ...}``) and ``torchtitan/components/checkpoint.py`` (the loader is one
entry of the state given to ``dcp.save`` / ``dcp.load``).

Each rank packs its own shard of documents; after two steps rank 0 has consumed 4 documents and rank 1 six. A
"preemption" is simulated in-process: save, build a fresh model and data loader, load, finish the epoch. Every
rank's loader state goes in under ``dp_rank_<rank>``, so DCP writes one entry per rank and each rank gets its own
back; both ranks have 3 sequences left. What looks suspicious and is right: the ranks put different keys into
the state given to one collective save and load, the values differ per rank, and rank 0 alone creates and
removes the checkpoint directory (its path broadcast).
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SEQ_LEN = 8
VOCAB = 32
DOC_LENGTHS = {0: [5, 3, 8, 4, 4, 6, 2, 8, 8, 3], 1: [2, 2, 3, 1, 8, 4, 4, 8, 6, 2, 8, 1]}
SAVE_AFTER_STEPS = 2


class PackedDocuments:
    """Documents packed into ``SEQ_LEN + 1`` token chunks (inputs and shifted labels), resumable."""

    def __init__(self, rank):
        generator = torch.Generator().manual_seed(50 + rank)
        self.documents = [torch.randint(1, VOCAB, (n,), generator=generator).tolist() for n in DOC_LENGTHS[rank]]
        self.sample_idx = 0
        self.token_buffer = []

    def __iter__(self):
        while self.sample_idx < len(self.documents):
            self.token_buffer.extend(self.documents[self.sample_idx])
            self.sample_idx += 1
            while len(self.token_buffer) >= SEQ_LEN + 1:
                chunk = torch.tensor(self.token_buffer[:SEQ_LEN + 1])
                self.token_buffer = self.token_buffer[SEQ_LEN + 1:]
                yield chunk[:-1].unsqueeze(0), chunk[1:].unsqueeze(0)

    def state_dict(self):
        return {"sample_idx": self.sample_idx, "token_buffer": list(self.token_buffer)}

    def load_state_dict(self, state):
        self.sample_idx = state["sample_idx"]
        self.token_buffer = list(state["token_buffer"])


def build(rank):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(VOCAB, 16), nn.Linear(16, VOCAB)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer, PackedDocuments(rank)


def train_step(model, optimizer, inputs, labels):
    logits = model(inputs)
    loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def checkpoint_state(model, data):
    return {"model": model.module.state_dict(), f"dp_rank_{dist.get_rank()}": data.state_dict()}


def worker():
    rank = dist.get_rank()
    directory = [tempfile.mkdtemp(prefix="r13_dcp_") if rank == 0 else None]
    dist.broadcast_object_list(directory)
    checkpoint_id = os.path.join(directory[0], f"step_{SAVE_AFTER_STEPS}")
    try:
        model, optimizer, data = build(rank)
        batches = iter(data)
        for _ in range(SAVE_AFTER_STEPS):
            train_step(model, optimizer, *next(batches))
        print(f"rank {rank}: saving at document {data.sample_idx}", flush=True)
        dcp.save(checkpoint_state(model, data), checkpoint_id=checkpoint_id)

        # the restarted job: fresh objects, state loaded from the checkpoint
        model, optimizer, data = build(rank)
        state = checkpoint_state(model, data)
        dcp.load(state, checkpoint_id=checkpoint_id)
        model.module.load_state_dict(state["model"])
        data.load_state_dict(state[f"dp_rank_{rank}"])
        print(f"rank {rank}: resumed at document {data.sample_idx}", flush=True)
        steps = 0
        for inputs, labels in data:
            train_step(model, optimizer, inputs, labels)
            steps += 1
        print(f"rank {rank}: {steps} steps after the restart", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(directory[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
