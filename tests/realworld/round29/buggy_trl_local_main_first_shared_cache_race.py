"""TRL's dataset preparation under ``local_main_process_first()`` on two nodes that share one datasets cache.

Models huggingface/trl PR #3106 ("Use main process for dataset.map": a race condition "that arises in our trainers
when they are run on >16 nodes", fixed by preparing the dataset under ``PartialState().main_process_first()``
instead of ``local_main_process_first()``) and foundation-model-stack/fms-hf-tuning PR #506 (the same switch:
``local_main_process_first`` "can cause race conditions among nodes and lead to cache ``FileNotFoundErrors``"). The
code modelled is TRL's ``SFTTrainer._prepare_dataset`` (the "Converting train dataset to ChatML" / "Applying chat
template" maps inside the context manager), accelerate's ``PartialState._goes_first`` (a non-first process calls
``wait_for_everyone()`` before the block, the first process after it) and the cache ``datasets`` writes: files
produced under a ``<name>.incomplete`` directory that is renamed into place when complete
(``datasets.builder.incomplete_dir``).

Written for this corpus (nothing copied). Four ranks play two nodes of two (node = ``rank // 2``,
``local_rank = rank % 2``) on one host, and the cache directory is one directory both "nodes" see -- a shared file
system. ``prepare_dataset`` stands in for ``Dataset.map`` with its cache: 12 conversations rendered with a ChatML
template in 6 shards of 2, 0.1 s per shard, written under ``map-<fingerprint>.incomplete`` and renamed to
``map-<fingerprint>``. Rank 2 starts 0.3 s after rank 0 (``time.sleep``, a stand-in for its slower tokenizer load).

The bug: the block is entered first by each node's local main process, so ranks 0 and 2 both find no cache and both
write the same ``.incomplete`` directory. Rank 0 finishes and renames it; rank 2's next shard write raises
``FileNotFoundError``. Ranks 1 and 3 wait in the barrier before the block, rank 0 in the one after it.
"""
import datetime
import hashlib
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20

RANKS_PER_NODE = 2  # the job's --nproc-per-node on each emulated node
SHARD_ROWS = 2


class PartialState:
    def __init__(self):
        self.process_index = dist.get_rank()
        self.local_process_index = self.process_index % RANKS_PER_NODE
        self.is_main_process = self.process_index == 0
        self.is_local_main_process = self.local_process_index == 0

    def wait_for_everyone(self):
        dist.barrier()  # WAITS

    @contextmanager
    def _goes_first(self, is_main):
        if not is_main:
            self.wait_for_everyone()  # WAITS
        yield
        if is_main:
            self.wait_for_everyone()  # WAITS

    def main_process_first(self):
        return self._goes_first(self.is_main_process)

    def local_main_process_first(self):
        return self._goes_first(self.is_local_main_process)


def cache_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_trl_cache_{tag}")


def make_conversations():
    topics = ["gloo", "nccl", "barrier", "broadcast", "all_reduce", "scatter",
              "gather", "store", "timeout", "rank", "world", "group"]
    return [[{"role": "user", "content": f"What does {t} do?"},
             {"role": "assistant", "content": f"{t} is part of torch.distributed ({i})."}]
            for i, t in enumerate(topics)]


def apply_chat_template(messages):
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def prepare_dataset(conversations, rank):
    """Stand-in for Dataset.map(apply_chat_template) with its on-disk cache."""
    fingerprint = hashlib.sha1((json.dumps(conversations) + "chatml-v1").encode()).hexdigest()[:16]
    final = os.path.join(cache_root(), f"map-{fingerprint}")
    if os.path.isdir(final):
        rows = []
        for name in sorted(os.listdir(final)):
            with open(os.path.join(final, name)) as f:
                rows.extend(json.load(f))
        print(f"[rank {rank}] Loading cached processed dataset at {os.path.basename(final)}", flush=True)
        return rows
    incomplete = final + ".incomplete"
    os.makedirs(incomplete, exist_ok=True)
    rows = []
    for i in range(0, len(conversations), SHARD_ROWS):
        shard = [apply_chat_template(c) for c in conversations[i:i + SHARD_ROWS]]
        time.sleep(0.1)  # tokenising a shard
        with open(os.path.join(incomplete, f"shard-{i // SHARD_ROWS:05d}.json"), "w") as f:
            json.dump(shard, f)
        rows.extend(shard)
    if os.path.isdir(final):
        shutil.rmtree(final)
    os.rename(incomplete, final)
    print(f"[rank {rank}] Applying chat template to train dataset: done, {len(rows)} examples", flush=True)
    return rows


def worker():
    state = PartialState()
    rank = state.process_index
    if rank == 0:
        shutil.rmtree(cache_root(), ignore_errors=True)
        os.makedirs(cache_root())
    dist.barrier()
    if rank == 2:
        time.sleep(0.3)  # stand-in: this node's tokenizer loads more slowly
    conversations = make_conversations()
    with state.local_main_process_first():  # BUG # WAITS
        rows = prepare_dataset(conversations, rank)
    # a short DDP run on this rank's share: predict the rendered length from the word count
    mine = rows[rank::dist.get_world_size()]
    x = torch.tensor([[len(r.split()) / 10.0] for r in mine])
    y = torch.tensor([[len(r) / 100.0] for r in mine])
    torch.manual_seed(0)
    model = DDP(nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    dist.all_reduce(loss)
    if rank == 0:
        print(f"{len(rows)} examples; mean loss {loss.item() / dist.get_world_size():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(cache_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
