"""Ray Train's ``get_preemption_info()`` read locally on each worker and used to decide whether to ``report()``.

Source: ray-project/ray PR #65183 ("[train] Make ray.train.get_preemption_info() consistent across workers", 2026);
modelled on the training-loop pattern the PR gives (``train_step()``, then ``if ray.train.get_preemption_info() is
not None: ray.train.report(metrics, checkpoint=ckpt)``) with the two pieces of Ray Train it relies on written out
here: the preemption notice, which the controller fans out to the workers "as independent, un-awaited RPCs", and
``report()``, which collects every worker's metrics and checkpoint (a collective over the workers).

What the item does: two workers train a DDP model step by step (about 0.15 s a step). A preemption notice is sent to
both workers; it reaches rank 1 after 0.5 s and rank 0 after 1.6 s (each worker's notice is delivered by its own
RPC). On the notice, a worker reports a checkpoint and stops.

The bug: ``get_preemption_info()`` is "a local, per-worker read" (the PR). Rank 1 sees the notice one or more steps
before rank 0 and enters ``report()``; rank 0 reads ``None`` and goes on to the next ``train_step()``, whose gradient
all-reduce meets rank 1's report collective. "Deadlock. Rank 0 waits for rank 1's gradients; rank 1 waits for rank 0
to reach report()."
"""

import datetime
import io
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 20
STEP_TIME = 0.15
NOTICE_ARRIVAL = {0: 1.6, 1: 0.5}  # seconds after the loop starts, per worker

_local_preemption_info = {}


def _deliver_notice_later(rank: int) -> None:
    """The controller's un-awaited RPC to this worker."""
    def deliver():
        time.sleep(NOTICE_ARRIVAL[rank])
        _local_preemption_info["info"] = {"reason": "spot instance reclaimed", "deadline_s": 30}
    threading.Thread(target=deliver, daemon=True).start()


def get_preemption_info():
    return _local_preemption_info.get("info")  # BUG


def report(metrics: dict, checkpoint: bytes) -> None:
    """Every worker hands its metrics and checkpoint to the controller; all workers take part."""
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, {"metrics": metrics, "has_checkpoint": checkpoint is not None})  # WAITS
    if dist.get_rank() == 0:
        print(f"reported {len(gathered)} workers, loss {metrics['loss']:.4f}")


def train_loop_per_worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(rank)

    def train_step() -> float:
        features, targets = torch.randn(8, 4, generator=generator), torch.randn(8, 1, generator=generator)
        loss = torch.nn.functional.mse_loss(model(features), targets)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        time.sleep(STEP_TIME)
        return loss.item()

    _deliver_notice_later(rank)
    for step in range(MAX_STEPS):
        loss = train_step()  # WAITS
        if get_preemption_info() is not None:
            buffer = io.BytesIO()
            torch.save({"step": step, "model": model.module.state_dict()}, buffer)
            report({"loss": loss, "step": step}, checkpoint=buffer.getvalue())  # WAITS
            return


def worker():
    train_loop_per_worker()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
