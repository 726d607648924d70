"""DeePMD-kit PyTorch training: the epoch-derived batch count is broadcast from rank 0 before the step schedule and
the full-validation schedule are derived from it.

Source: deepmodeling/deepmd-kit PR #5570 ("fix(pt/train): keep epoch-derived num_steps consistent across ranks"; the
fix: "Broadcast it from rank 0"). Modelled on ``deepmd/pt/train/training.py`` and ``deepmd/pt/train/validation.py``
``FullValidator``.

Each rank still sums the sampler weights in its own loader order (7 versus 6 batches per epoch before the fix), but
``total_numb_batch`` is replaced by rank 0's value, so both ranks train 7 steps and run full validation at steps 5
and 7 together.
"""

import math

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

SYSTEM_WEIGHTS = {"water": 0.1, "ice": 0.2, "vapour": 0.3}
SYSTEM_NBATCHES = {"water": 1, "ice": 1, "vapour": 3}
NUM_EPOCH = 1
VALIDATING = {"full_validation": True, "validation_freq": 2, "full_val_start": 0.75}


def compute_total_numb_batch(order):
    total = 0.0
    for name in order:
        total += SYSTEM_WEIGHTS[name]
    return math.ceil(max(SYSTEM_NBATCHES[n] / (SYSTEM_WEIGHTS[n] / total) for n in order))


def broadcast_value_from_rank0(value):
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def resolve_full_validation_start_step(full_val_start, num_steps):
    if 0.0 <= full_val_start < 1.0:
        return int(num_steps * full_val_start)
    return int(full_val_start)


class FullValidator:
    def __init__(self, num_steps, rank):
        self.rank = rank
        self.freq = VALIDATING["validation_freq"]
        self.start_step = resolve_full_validation_start_step(VALIDATING["full_val_start"], num_steps)

    def should_run(self, display_step):
        return display_step >= self.start_step and (display_step - self.start_step) % self.freq == 0

    def run(self, display_step, model):
        if not self.should_run(display_step):
            return None
        dist.barrier()
        save_path = [None]
        if self.rank == 0:
            with torch.no_grad():
                mae = model.module(torch.ones(4, 3)).abs().mean().item()
            save_path[0] = f"best.ckpt-{display_step}.t-1.pt"
            print(f"[rank 0] full validation at step {display_step}: E:MAE={mae:.4f}", flush=True)
        dist.broadcast_object_list(save_path, src=0)
        dist.barrier()
        return save_path[0]


def worker():
    rank = dist.get_rank()
    order = list(SYSTEM_WEIGHTS) if rank == 0 else list(reversed(SYSTEM_WEIGHTS))
    local = compute_total_numb_batch(order)
    total_numb_batch = int(broadcast_value_from_rank0(local))
    num_steps = NUM_EPOCH * total_numb_batch
    print(f"[rank {rank}] local total_numb_batch={local}, agreed {total_numb_batch}, num_steps={num_steps}",
          flush=True)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    validator = FullValidator(num_steps, rank)
    g = torch.Generator().manual_seed(rank)
    for step_id in range(num_steps):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 3, generator=g)).pow(2).mean()
        loss.backward()
        optimizer.step()
        validator.run(step_id + 1, model)
    print(f"[rank {rank}] training finished after {num_steps} steps", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
