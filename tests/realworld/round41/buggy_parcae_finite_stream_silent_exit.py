"""parcae: the rank with the least data exhausts its parquet stream and leaves the training loop without a word.

Source: sandyresearch/parcae issue #12 ("Upstream data-exhaustion hang", 2026-09). The issue names three causes
that compose: "No wraparound. `scripts/train.py:1017` hardcodes `repetitions=None` for the `pqds`/`pqds-pure`
path (the `hfds` path a few lines above does honour `curr_config.repetitions`), so a rank's stream is finite";
"Exhaustion is a normal loop exit, not an error" (`recpre/huggingface_dataset.py` `ParquetStreamPure.__iter__`:
`while self._state["file_idx"] < len(self.parquet_files):` -- "the generator returns. Nothing raises, and nothing
is communicated to the other ranks"); and `PackedIterableDataset.__iter__` (`recpre/data_loading_utils.py`) "does
the same thing". Symptom: "whichever rank holds the least data exhausts its shards first ... the remaining ranks
then block in the next collective until the NCCL watchdog aborts them ... Rank 0 has already printed its
completion message".

Rank 0's shard has two parquet files, rank 1's three (two rows each, one packed block per row). Rank 0's stream
ends after four steps; it prints its completion message and leaves, while rank 1 waits in the DDP all-reduce of
its fifth step.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 6
FILES_PER_RANK = {0: 2, 1: 3}  # parquet files in each rank's shard
ROWS_PER_FILE = 2


class ParquetStreamPure:
    def __init__(self, parquet_files, repetitions):
        self.parquet_files = parquet_files
        self.repetitions = repetitions  # None: a single pass

    def _state_init(self):
        self._state = {"file_idx": 0, "pass": 0}

    def __iter__(self):
        self._state_init()
        while True:
            while self._state["file_idx"] < len(self.parquet_files):
                yield from self.parquet_files[self._state["file_idx"]]
                self._state["file_idx"] += 1
            self._state["pass"] += 1
            if self.repetitions is None or self._state["pass"] >= self.repetitions:
                return
            self._state["file_idx"] = 0


class PackedIterableDataset:
    def __init__(self, stream, block_size):
        self.stream, self.block_size = stream, block_size

    def __iter__(self):
        for row in self.stream:
            yield torch.tensor(row[: self.block_size], dtype=torch.float32)


def build_stream(rank, repetitions):
    files = [[[float(rank * 100 + f * 10 + r + c) for c in range(4)] for r in range(ROWS_PER_FILE)]
             for f in range(FILES_PER_RANK[rank])]
    return ParquetStreamPure(files, repetitions=repetitions)


def train(model, optimizer, loader, rank):
    step = 0
    for step, block in zip(range(MAX_STEPS), loader):
        loss = model(block.unsqueeze(0)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
    return step + 1


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    stream = build_stream(rank, repetitions=None)  # BUG
    steps = train(model, optimizer, PackedIterableDataset(stream, block_size=4), rank)  # WAITS
    print(f"[rank {rank}] Training complete after {steps} steps", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
