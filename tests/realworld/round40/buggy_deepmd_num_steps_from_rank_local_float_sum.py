"""DeePMD-kit PyTorch training: the epoch-derived step count is computed on every rank from floating-point sampler
weights, and a one-step difference moves the full-validation schedule.

Source: deepmodeling/deepmd-kit PR #5570 ("fix(pt/train): keep epoch-derived num_steps consistent across ranks"):
"Per-rank sampler-weight noise made total_numb_batch (and thus num_steps) differ by one unit, desyncing the
full-validation start step and deadlocking mismatched collectives. Broadcast it from rank 0." Modelled on
``deepmd/pt/train/training.py`` (``num_epoch`` -> ``compute_total_numb_batch`` = ``ceil(max(nbatches / probs))``) and
``deepmd/pt/train/validation.py`` ``FullValidator`` (``resolve_full_validation_start_step``, ``should_run``, ``run``:
``barrier`` -> rank-0 evaluation -> ``broadcast_object_list(save_path)`` -> ``barrier``).

The training systems' sampling probabilities are normalised sampler weights. Each rank sums the weights in the order
its own data loader lists the systems, so the sum is ``0.6000000000000001`` on one rank and ``0.6`` on the other;
``ceil`` turns the last-bit difference into 7 versus 6 batches per epoch. With ``full_val_start = 0.75`` rank 0
starts full validation at step 5 and rank 1 at step 4: at step 4 rank 1 enters the validator's barrier while rank 0
goes on to the next DDP training step.

BUG: ``num_steps`` is derived from the rank-local float computation and never agreed on.
"""

import math

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

SYSTEM_WEIGHTS = {"water": 0.1, "ice": 0.2, "vapour": 0.3}
SYSTEM_NBATCHES = {"water": 1, "ice": 1, "vapour": 3}
NUM_EPOCH = 1
VALIDATING = {"full_validation": True, "validation_freq": 2, "full_val_start": 0.75}


def compute_total_numb_batch(order):
    total = 0.0
    for name in order:  # the rank's own loader order
        total += SYSTEM_WEIGHTS[name]
    return math.ceil(max(SYSTEM_NBATCHES[n] / (SYSTEM_WEIGHTS[n] / total) for n in order))


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
        dist.barrier()  # WAITS
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
    total_numb_batch = compute_total_numb_batch(order)
    num_steps = NUM_EPOCH * total_numb_batch  # BUG
    print(f"[rank {rank}] total_numb_batch={total_numb_batch} num_steps={num_steps}", flush=True)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    validator = FullValidator(num_steps, rank)
    g = torch.Generator().manual_seed(rank)
    for step_id in range(num_steps):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 3, generator=g)).pow(2).mean()
        loss.backward()  # WAITS
        optimizer.step()
        validator.run(step_id + 1, model)  # WAITS
    print(f"[rank {rank}] training finished after {num_steps} steps", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
