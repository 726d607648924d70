"""Modelled on pytorch/torchtitan PR #313 ("Implement async_checkpoint": ``dcp.async_save(self.states,
checkpoint_id=..., process_group=self.pg)`` with ``self.pg = dist.new_group(backend="gloo")`` made when the
checkpointer is built), KempnerInstitute/KempnerForge PR #105 ("Run the checkpoint ``save()`` barrier on a
dedicated gloo group", fixing issue #104) and the review comment on Tencent-Hunyuan/UniRL PR #410 (a background
save thread and the main thread must not drive one process group concurrently). The save path stands in for
``torch.distributed.checkpoint.async_save``: the state is staged (copied) in the main thread, then a background
thread plans (an object all-gather of the ranks' write plans), writes this rank's shard and finishes with a
barrier, while the main thread trains on.

What it does: DDP training on 2 ranks; at step 2 an async checkpoint is started; training goes on (DDP's gradient
all-reduces on the default group) while the save runs; the main thread waits for the save before the end.

Why it looks suspicious but is right: collectives run from a second thread while the main thread is in its own
collectives, and the ranks reach the save's collectives at different times (rank 1's staging is slower). The
save's collectives run on their own gloo group, created on every rank, in the same order, before training, so
the two streams of collectives never share a group and pair up within each group.
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

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class AsyncCheckpointer:
    def __init__(self, folder):
        self.folder = folder
        self.pg = dist.new_group(backend="gloo")  # the save's own group, made on every rank
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
        dist.all_gather_object(plans, plan, group=self.pg)
        path = os.path.join(self.folder, f"step-{step}")
        os.makedirs(path, exist_ok=True)
        torch.save(staged, os.path.join(path, f"__{rank}_0.distcp"))
        dist.barrier(group=self.pg)
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
        loss.backward()
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
    loss = train(model, optimizer, checkpointer, batches)
    dist.barrier()
    if rank == 0:
        print(f"final loss {loss:.4f}; checkpoint files: {sorted(os.listdir(os.path.join(folder, 'step-2')))}")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
