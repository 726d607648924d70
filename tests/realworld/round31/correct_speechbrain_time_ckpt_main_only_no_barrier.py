"""SpeechBrain's intra-epoch checkpoint, due by each rank's own clock, saved on the main process with no barrier.

Models: speechbrain/speechbrain issue #1166 ("Checkpointing may cause the NCCL error"): with DDP and
``--ckpt_interval_minutes`` set, training crashed with "Detected mismatch between collectives on ranks", the time
before the crash following the interval. The cause named in the thread: "We're using the time since last
checkpoint to determine if we should checkpoint this - this will very slightly vary between the different
processes. Eventually, there comes a batch during which one of these two processes enters the intra-epoch
checkpoint saving block and the other does not. In the intra-epoch saving block, the run_on_main function has a
ddp.barrier synchronisation routine." Fixed by PR #1167 ("Remove ddp barrier from intra-epoch ckpt saving"): the
save runs on the main process only, with no barrier.
Code modelled (written here, not copied): ``speechbrain/core.py`` ``Brain.fit`` of that time (the check
``time.time() - last_ckpt_time >= ckpt_interval_minutes * 60`` after every batch, then
``run_on_main(self._save_intra_epoch_ckpt)``), ``speechbrain/utils/distributed.py`` ``run_on_main`` (the function
on the main process, then ``ddp_barrier()`` on every process that called it), and the main process's per-batch
progress-bar / log work, which makes its clock read later than the others' at the check.

The fix modelled is PR #1167's: the intra-epoch save is done by the main process alone (``if
if_main_process():``), without ``run_on_main``'s barrier, so a rank whose clock says "not yet" has nothing to
match. ``run_on_main`` (with its barrier) stays in the file for other uses, as in SpeechBrain.
2 ranks, a small DDP model, 6 steps, interval 1.3 s, rank 0 spending 0.5 s on its log line after each step: the
ranks still disagree on when a checkpoint is due, and both finish; rank 0 saves at step 3 and step 6.
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

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 6
CKPT_INTERVAL_SECONDS = 1.3
MAIN_LOG_SECONDS = 0.5


def save_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_sb_time_{tag}")


def if_main_process():
    return dist.get_rank() == 0


def ddp_barrier():
    if dist.is_initialized():
        dist.barrier()


def run_on_main(func, kwargs=None):
    if if_main_process():
        func(**(kwargs or {}))
    ddp_barrier()


class Brain:
    def __init__(self, rank):
        torch.manual_seed(0)
        self.rank = rank
        self.modules = DDP(nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 4)))
        self.optimizer = torch.optim.SGD(self.modules.parameters(), lr=0.05)
        self.step = 0
        self.log = []

    def _save_intra_epoch_ckpt(self):
        ckpt_dir = os.path.join(save_root(), f"CKPT+step{self.step:02d}")
        os.makedirs(ckpt_dir, exist_ok=True)
        torch.save(self.modules.module.state_dict(), os.path.join(ckpt_dir, "model.ckpt"))
        print(f"saved intra-epoch checkpoint at step {self.step}", flush=True)

    def fit(self, batches):
        last_ckpt_time = time.time()
        for x, y in batches:
            loss = nn.functional.cross_entropy(self.modules(x), y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.step += 1
            if if_main_process():
                self.log.append(f"step {self.step}: loss {loss.item():.4f}")
                time.sleep(MAIN_LOG_SECONDS)
            if time.time() - last_ckpt_time >= CKPT_INTERVAL_SECONDS:
                if if_main_process():
                    self._save_intra_epoch_ckpt()
                last_ckpt_time = time.time()
        return loss.item()


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(save_root(), ignore_errors=True)
    dist.barrier()
    g = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.randn(16, 12, generator=g), torch.randint(0, 4, (16,), generator=g)) for _ in range(STEPS)]
    last = Brain(rank).fit(batches)
    print(f"[rank {rank}] training done, last loss {last:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(save_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
