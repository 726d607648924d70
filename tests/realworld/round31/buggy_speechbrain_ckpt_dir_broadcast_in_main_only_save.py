"""SpeechBrain's intra-epoch checkpoint, saved on the main process only, broadcasts its folder name from inside.

Models: speechbrain/speechbrain issue #2401 ("Possible NCCL-level deadlock during checkpointing"): with
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` the run stopped with "Detected mismatch between collectives on ranks. Rank 0 is
running collective ... OpType=BROADCAST, TensorShape=[1] ... but Rank 1 is running collective ... OpType=ALLREDUCE",
rank 0's stack ending in ``Checkpointer.save_checkpoint`` -> ``torch.distributed.broadcast_object_list(
communication_list, src=0)``. The cause, as PR #2404 ("Make a ddp broadcast clone that handles main-process-only")
names it: "Checkpointing with DDP uses a torch.distributed broadcast to communicate the folder for saving to all
procs. However, this broadcast causes a freeze if checkpointing is called in a main-process-only section of the
code" -- the intra-epoch checkpoint is such a section since PR #1167 (issue #1166).
Code modelled (written here, not copied): ``speechbrain/core.py`` ``Brain.fit`` / ``_fit_train`` (an intra-epoch
checkpoint every ``ckpt_interval_steps`` steps, saved under ``main_process_only``, which counts
``MAIN_PROC_ONLY``) and ``speechbrain/utils/checkpoints.py`` ``Checkpointer.save_checkpoint`` (a time-stamped
``CKPT+...`` folder whose name rank 0 broadcasts so that sharded saves agree on it).

2 ranks, a small DDP model, 6 steps, a checkpoint every 3 steps: at step 3 rank 0 waits in the folder-name
broadcast, rank 1 is in step 4's backward (DDP's gradient all-reduce).
Bug: the bare ``broadcast_object_list`` in ``save_checkpoint`` (BUG); waiting: rank 0 there (WAITS), rank 1 in
``backward`` (WAITS).
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 6
CKPT_INTERVAL_STEPS = 3
MAIN_PROC_ONLY = 0


def save_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_sb_bcast_{tag}")


def if_main_process():
    return dist.get_rank() == 0


def main_process_only(function):
    def wrapped(*args, **kwargs):
        global MAIN_PROC_ONLY
        MAIN_PROC_ONLY += 1
        try:
            if if_main_process():
                return function(*args, **kwargs)  # WAITS
        finally:
            MAIN_PROC_ONLY -= 1

    return wrapped


class Checkpointer:
    def __init__(self, directory, recoverables):
        self.directory = directory
        self.recoverables = recoverables

    def save_checkpoint(self, meta):
        ckpt_dir = os.path.join(self.directory, time.strftime("CKPT+%Y-%m-%d+%H-%M-%S") + f"+{meta['step']:02d}")
        communication_list = [ckpt_dir]
        dist.broadcast_object_list(communication_list, src=0)  # BUG # WAITS
        ckpt_dir = communication_list[0]
        if if_main_process():
            os.makedirs(ckpt_dir, exist_ok=True)
            for name, obj in self.recoverables.items():
                torch.save(obj.state_dict(), os.path.join(ckpt_dir, f"{name}.ckpt"))
            torch.save(meta, os.path.join(ckpt_dir, "CKPT.yaml"))
        print(f"saved intra-epoch checkpoint {os.path.basename(ckpt_dir)}", flush=True)


class Brain:
    def __init__(self, rank):
        torch.manual_seed(0)
        self.modules = DDP(nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 4)))
        self.optimizer = torch.optim.SGD(self.modules.parameters(), lr=0.05)
        self.checkpointer = Checkpointer(save_root(), {"model": self.modules.module, "optimizer": self.optimizer})
        self.step = 0

    @main_process_only
    def _save_intra_epoch_ckpt(self):
        self.checkpointer.save_checkpoint(meta={"step": self.step, "end-of-epoch": False})  # WAITS

    def fit(self, batches):
        for x, y in batches:
            loss = nn.functional.cross_entropy(self.modules(x), y)
            loss.backward()  # WAITS
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.step += 1
            if self.step % CKPT_INTERVAL_STEPS == 0:
                self._save_intra_epoch_ckpt()  # WAITS
        return loss.item()


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(save_root(), ignore_errors=True)
    dist.barrier()
    g = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.randn(16, 12, generator=g), torch.randint(0, 4, (16,), generator=g)) for _ in range(STEPS)]
    last = Brain(rank).fit(batches)  # WAITS
    print(f"[rank {rank}] training done, last loss {last:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(save_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
