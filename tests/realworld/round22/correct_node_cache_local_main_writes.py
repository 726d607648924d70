"""Round 22: a per-node token cache written by each node's local main process.

Models: accelerate's ``PartialState`` (``is_main_process`` vs ``is_local_main_process``, ``local_main_process_first``),
transformers ``TrainingArguments.main_process_first(local=True)`` (its docstring: ``local=False`` only "in multi-node
environment with a shared filesystem") and ``save_on_each_node``, and the "preprocess on the main process,
``save_to_disk``, barrier, ``load_from_disk`` everywhere" recipe of HF example scripts; axolotl issue #884 and
detectron2 issue #1732 for what happens on a second machine without shared storage.

What it does: four processes stand for two nodes of two GPUs (``GPUS_PER_NODE``).  Each node has its own scratch
directory (a stand-in for a node-local ``$TMPDIR`` / NVMe).  The tokenised corpus is built once per node, cached in
that node's scratch dir, every rank opens it after a barrier, and a small DDP model is trained on the shards.

This is the correct twin: the writer is ``is_local_main_process`` (local rank 0 of each node), so each node's
scratch dir gets its own cache before the barrier and every rank finds the file.
"""
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20
GPUS_PER_NODE = 2  # stand-in: the four processes are two "nodes" of two


class RunState:
    """Stand-in for accelerate's PartialState on a 2-node job."""

    def __init__(self):
        self.process_index = dist.get_rank()
        self.num_processes = dist.get_world_size()
        self.local_process_index = self.process_index % GPUS_PER_NODE
        self.node_index = self.process_index // GPUS_PER_NODE

    @property
    def is_main_process(self):
        return self.process_index == 0

    @property
    def is_local_main_process(self):
        return self.local_process_index == 0

    def wait_for_everyone(self):
        dist.barrier()


def run_root(state):
    box = [tempfile.mkdtemp(prefix="r22_nodecache_") if state.is_main_process else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def node_scratch(root, state):
    # stand-in for a node-local scratch dir: each "node" sees only its own folder
    path = os.path.join(root, f"node{state.node_index}", "tmp")
    os.makedirs(path, exist_ok=True)
    return path


def tokenize_corpus():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 50, (48, 8), generator=g)
    return {"input_ids": ids, "labels": ids.sum(dim=1) % 4}


class CachedTokens(Dataset):
    def __init__(self, cache_file):
        blob = torch.load(cache_file)
        self.ids, self.labels = blob["input_ids"], blob["labels"]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.labels[i]


def build_dataset(state, scratch):
    cache_file = os.path.join(scratch, "tokenized.pt")
    if state.is_local_main_process:
        torch.save(tokenize_corpus(), cache_file)
    state.wait_for_everyone()
    return CachedTokens(cache_file)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, ids):
        return self.head(self.emb(ids))


def train(state, dataset):
    torch.manual_seed(0)
    model = DDP(Classifier())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for ids, labels in loader:
            loss = nn.functional.cross_entropy(model(ids), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return loss.item()


def worker():
    state = RunState()
    root = run_root(state)
    try:
        dataset = build_dataset(state, node_scratch(root, state))
        loss = train(state, dataset)
        if state.is_local_main_process:
            print(f"node {state.node_index}: final loss {loss:.4f}", flush=True)
        dist.barrier()
    finally:
        if state.is_main_process:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
