"""Modelled on KempnerInstitute/KempnerForge issue #104 ("Async checkpoint save can deadlock: DCP background save
thread and ``save()`` barrier use the same process group": ``dcp.async_save()`` continues its save planning on a
background thread, "which issues collectives on the default process group (the manager passes
``process_group=None``)"; "Concurrent collectives on the same process group from two threads have no cross-rank
ordering guarantee"), the fix in PR #105 and torchtitan PR #313 (a dedicated ``new_group(backend="gloo")`` for
``async_save``), and the UniRL PR #410 review ("a background thread continuously all-reducing on the memoized
group" errors with "Connection closed by peer"). The save path stands in for
``torch.distributed.checkpoint.async_save``: the state is staged in the main thread, then a background thread
plans (an object all-gather of the write plans), writes this rank's shard and finishes with a barrier.

The bug: the checkpointer passes no process group, so the save thread's collectives go to the default group,
which the main thread's DDP gradient all-reduces use at the same time. Rank 0's save thread reaches its
all-gather while rank 1's is still staging (its shard is larger) and rank 1's main thread is in the next step's
gradient all-reduce: the two ranks' n-th collectives on the default group are different calls. Under gloo both
main threads end in a DDP gradient all-reduce that never completes (20 s timeout); the issue reports a deadlock.

Correct twin: ``correct_async_checkpoint_own_gloo_group``.
"""

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class AsyncCheckpointer:
    def __init__(self, folder):
        self.folder = folder
        self.pg = None  # BUG
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="AsyncCheckpointExecutor")
        self.future = None

    def save(self, state, step):
        self.wait()
        staged = {name: tensor.detach().clone() for name, tensor in state.items()}
        self.future = self.executor.submit(self._save_in_background, staged, step)

    def _save_in_background(self, staged, step):
        rank = dist.get_rank(self.pg)
        time.sleep(0.5 + 1.5 * rank)  # stands in for copying this rank's shard off the device (rank 1's is larger)
        plan = {"rank": rank, "items": sorted(staged), "bytes": sum(t.numel() * 4 for t in staged.values())}
        plans = [None] * dist.get_world_size(self.pg)
        dist.all_gather_object(plans, plan, group=self.pg)  # WAITS
        path = os.path.join(self.folder, f"step-{step}")
        os.makedirs(path, exist_ok=True)
        torch.save(staged, os.path.join(path, f"__{rank}_0.distcp"))
        dist.barrier(group=self.pg)  # WAITS
        return plans

    def wait(self):
        if self.future is not None:
            self.future.result()
            self.future = None

    def close(self):
        self.wait()
        self.executor.shutdown()


def train(model, optimizer, checkpointer, batches):
    for step, (features, target) in enumerate(batches):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(features), target)
        loss.backward()  # WAITS
        optimizer.step()
        time.sleep(0.2)  # stands in for the rest of a training step
        if step == 2:
            checkpointer.save(model.module.state_dict(), step)
    checkpointer.close()
    return loss.item()


def worker():
    rank = dist.get_rank()
    folder = os.path.join(tempfile.gettempdir(), f"r9_async_ckpt_{os.environ.get('MASTER_PORT', 'lab')}")
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    checkpointer = AsyncCheckpointer(folder)
    torch.manual_seed(1 + rank)
    batches = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(12)]
    loss = train(model, optimizer, checkpointer, batches)  # WAITS
    dist.barrier()
    if rank == 0:
        print(f"final loss {loss:.4f}; checkpoint files: {sorted(os.listdir(os.path.join(folder, 'step-2')))}")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
