"""A per-batch ``monitored_barrier`` deadlock guard that times out while the last rank writes its big shard (buggy).

Models: mosaicml/composer ``trainer/trainer.py`` (``adaptive_gradient_accumulation``: before the gradient sync
``dist.monitored_barrier(timeout=datetime.timedelta(seconds=max(10, 0.5 * self.batch_compute_time)))``, re-raised
as "A deadlock was encountered in the train loop, likely because a strict subset of ranks encountered CUDA OOM"),
composer PR #1319 / PR #2117 (OOM on a subset of ranks), ``torch.distributed.monitored_barrier``'s docstring (gloo
only; the timeout is the argument's, not the group's), and sharded checkpoints where every rank writes its own optimizer shard (DeepSpeed ``zero_pp_rank_*`` files,
``torch.distributed.checkpoint``).

Each batch starts with the guard, whose timeout is derived from the measured batch time (floored at
``MIN_GUARD_SECONDS``, scaled down from composer's 10 s). Every ``SAVE_EVERY`` batches every rank writes its own
shard; the partition is uneven and the last rank holds the big embedding shard, whose write (a sleep standing in
for it) takes longer than the guard's timeout; BUG: ``save_checkpoint`` returns
as soon as the rank's own shard is written ("each rank only waits for its own file"), so rank 0 enters the next
batch's guard while rank 1 is still writing; the guard's timeout (1.5 s, sized for a batch) expires on rank 0 --
gloo's ``monitored_barrier`` applies its timeout on rank 0, which collects the others -- and the trainer reports a
"deadlock" that is only rank 1's save. Rank 1 then reaches its guard and waits for an answer from rank 0, which is
gone.
"""
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MIN_GUARD_SECONDS = 1.5
WRITE_SECONDS = 5  # stand-in for writing the large (embedding) shard
SAVE_EVERY, STEPS = 3, 5


class Trainer:
    def __init__(self, ckpt_dir):
        self.rank = dist.get_rank()
        torch.manual_seed(0)
        self.model = DDP(nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.ckpt_dir = ckpt_dir
        self.batch_compute_time = 0.0
        self.gen = torch.Generator().manual_seed(self.rank)

    def deadlock_guard(self):
        timeout = max(MIN_GUARD_SECONDS, 0.5 * self.batch_compute_time)
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=timeout))  # WAITS
        except RuntimeError as e:
            raise RuntimeError(
                "A deadlock was encountered in the train loop, likely because a strict subset of ranks "
                f"diverged ({e})"
            ) from e

    def train_batch(self):
        start = time.time()
        self.deadlock_guard()  # WAITS
        x = torch.randn(16, 8, generator=self.gen)
        loss = (self.model(x) - x.mean(1, keepdim=True)).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.batch_compute_time = time.time() - start
        return loss.item()

    def save_checkpoint(self, step):
        path = os.path.join(self.ckpt_dir, f"ep0-ba{step}-rank{self.rank}.pt")
        torch.save({"model": self.model.module.state_dict(), "optim": self.opt.state_dict(), "step": step}, path)
        if self.rank == dist.get_world_size() - 1:
            time.sleep(WRITE_SECONDS)  # the embedding shard
        print(f"rank {self.rank} saved {os.path.basename(path)}", flush=True)
        return  # BUG

    def fit(self):
        for step in range(1, STEPS + 1):
            loss = self.train_batch()  # WAITS
            if step % SAVE_EVERY == 0:
                self.save_checkpoint(step)
        if self.rank == 0:
            print(f"done, last loss {loss:.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    names = [tempfile.mkdtemp(prefix="r21_ckpt_") if rank == 0 else None]
    dist.broadcast_object_list(names, src=0)
    try:
        Trainer(names[0]).fit()  # WAITS
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(names[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
