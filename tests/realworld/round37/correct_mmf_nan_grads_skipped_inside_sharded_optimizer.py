"""MMF -- NaN gradients skipped inside the (sharded) optimizer, so every rank still takes the optimizer step.

Source: facebookresearch/mmf PR #1073 ("[feat] add config option to skip update when NaN loss happens":
``training.skip_batch_on_nan_losses`` skips the optimizer (and grad scaler) update on a batch whose losses are not
finite), closed by its author because "the training hangs upon NaN losses when using optimizer state sharding";
issue #893 (NaN gradients, answered with a per-parameter finite check inside the optimizer). Modelled on
``mmf/trainers/core/training_loop.py`` ``run_training_batch`` / ``_check_nan_losses`` / ``_finish_update`` and
``mmf/utils/build.py`` (``optimizer.enable_state_sharding``: fairscale's ``OSS``, whose ``step`` updates the rank's
shard and then broadcasts every shard from its owner). Here torch's ``ZeroRedundancyOptimizer`` (the upstreamed OSS)
wraps AdamW, the model is plain DDP.

What it does: each rank trains on its own batches; ``run_training_batch`` runs forward, checks the losses for
NaN/Inf, runs backward (DDP all-reduces the gradients); ``_finish_update`` steps the sharded optimizer.

The fix (the route the PR's author gives when closing it, and the answer to issue #893): no rank-local skip in the
training loop -- every rank calls ``_finish_update`` -- and the optimizer itself leaves out parameters whose
gradients are not finite (``AdamWSkipNaNGrad``, an AdamW whose ``step`` ignores such gradients). The gradients are
all-reduced by DDP before the step, so every rank skips the same parameters, and the sharded step's broadcasts are
made by every rank.
"""

import math
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_BATCHES = 5


def make_batches(rank):
    g = torch.Generator().manual_seed(11 + rank)
    w = torch.randn(8, 3, generator=torch.Generator().manual_seed(5))
    batches = []
    for i in range(NUM_BATCHES):
        x = torch.randn(4, 8, generator=g)
        y = x @ w
        if rank == 1 and i == 2:
            y[1, 0] = float("nan")  # a corrupt annotation in rank 1's third batch
        batches.append({"x": x, "targets": y})
    return batches


class AdamWSkipNaNGrad(torch.optim.AdamW):
    """AdamW that skips the update of every parameter whose gradient holds NaN or Inf."""

    @torch.no_grad()
    def step(self, closure=None):
        kept = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and not torch.all(torch.isfinite(p.grad)):
                    kept.append((p, p.grad))
                    p.grad = None
        loss = super().step(closure)
        for p, grad in kept:
            p.grad = grad
        return loss


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, sample_list):
        return {"scores": self.head(torch.relu(self.encoder(sample_list["x"])))}


class TrainingLoop:
    def __init__(self, model, optimizer, skip_batch_on_nan_losses=False):
        self.model, self.optimizer = model, optimizer
        self.skip_batch_on_nan_losses = skip_batch_on_nan_losses
        self.num_updates = 0
        self.skipped = 0

    def _forward(self, batch):
        scores = self.model(batch)["scores"]
        return {"losses": {"mse": nn.functional.mse_loss(scores, batch["targets"])}}

    def _check_nan_losses(self, report):
        return [key for key, value in report["losses"].items() if not torch.all(torch.isfinite(value)).item()]

    def run_training_batch(self, batch):
        report = self._forward(batch)
        nan_keys = self._check_nan_losses(report)
        loss = sum(report["losses"].values())
        self._backward(loss)
        return report, nan_keys

    def _backward(self, loss):
        loss.backward()

    def _finish_update(self):
        self.optimizer.step()
        self.num_updates += 1

    def run_training_epoch(self, batches):
        for batch in batches:
            self.optimizer.zero_grad()
            report, nan_keys = self.run_training_batch(batch)
            if nan_keys:
                print(f"[rank {dist.get_rank()}] NaN in {nan_keys}; the optimizer skips non-finite gradients")
            if nan_keys and self.skip_batch_on_nan_losses:
                self.skipped += 1
                print(f"[rank {dist.get_rank()}] NaN in {nan_keys}; skipping the update of this batch")
                continue
            self._finish_update()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(Model())
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=AdamWSkipNaNGrad, lr=1e-2)
    loop = TrainingLoop(model, optimizer)
    loop.run_training_epoch(make_batches(rank))
    head = model.module.head.weight
    finite = bool(torch.isfinite(head).all())
    print(f"[rank {rank}] {loop.num_updates} updates, {loop.skipped} skipped; "
          f"head weights finite: {finite}; sum {float(head.sum()) if finite else math.nan:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
