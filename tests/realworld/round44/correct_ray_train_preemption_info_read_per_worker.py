"""Ray Train's ``get_preemption_info()``, fixed: a collective that hands every worker rank 0's view.

Source: ray-project/ray PR #65183 ("[train] Make ray.train.get_preemption_info() consistent across workers", 2026):
"This PR makes ray.train.get_preemption_info() a collective with broadcast_from_rank_zero, so all ranks reads the
same preemption info as rank0 sees ... The value is now safe to use as the condition for another collective, e.g.
ray.train.report()". Modelled on the loop the PR gives, with the notice's per-worker delivery and ``report()``'s
gathering of every worker's metrics and checkpoint written out here.

What the item does: two workers train a DDP model step by step (about 0.15 s a step). The preemption notice reaches
rank 1 after 0.5 s and rank 0 after 1.6 s; both workers act on it at the step where rank 0 has it, report a
checkpoint together and stop.
"""

import datetime
import io
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
    """A collective: every worker gets what rank 0 sees (``broadcast_from_rank_zero``)."""
    holder = [_local_preemption_info.get("info") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def report(metrics: dict, checkpoint: bytes) -> None:
    """Every worker hands its metrics and checkpoint to the controller; all workers take part."""
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, {"metrics": metrics, "has_checkpoint": checkpoint is not None})
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
        loss.backward()
        optimizer.step()
        time.sleep(STEP_TIME)
        return loss.item()

    _deliver_notice_later(rank)
    for step in range(MAX_STEPS):
        loss = train_step()
        if get_preemption_info() is not None:
            buffer = io.BytesIO()
            torch.save({"step": step, "model": model.module.state_dict()}, buffer)
            report({"loss": loss, "step": step}, checkpoint=buffer.getvalue())
            return


def worker():
    train_loop_per_worker()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
