"""LiBai `BestCheckpointer`: rank 0, the only rank with the evaluation metric, decides whether the model improved,
the decision is broadcast, and every rank enters the collective `Checkpointer.save` together (correct).

Source: Oneflow-Inc/libai PR #172 ("fix save best model bug"); `libai/engine/hooks.py` `BestCheckpointer.
_best_checking` and `EvalHook._do_eval`. The PR's fix: a flag tensor set to 1 on the main process when the latest
metric beats the best one, `dist.synchronize()`, the flag broadcast to every rank (`to_global(sbp=broadcast)`),
and `self._checkpointer.save(...)` on every rank whose flag is 1 -- all of them or none.

Stand-ins: a column-parallel linear layer (each rank holds half of the output rows; the forward all-gathers the
halves) for LiBai's 2D-parallel model; the evaluator returns its metrics on the main process only, as
detectron2-style `inference_on_dataset` does; the checkpointer gathers the full weight and rank 0 writes it;
`dist.broadcast` of a one-element tensor stands in for OneFlow's `to_global(sbp=broadcast)`.
"""

import logging
import math
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

logger = logging.getLogger("libai.engine.hooks")


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        full = torch.randn(out_features, in_features, generator=torch.Generator().manual_seed(0))
        self.weight = torch.nn.Parameter(full.chunk(world)[rank].clone())

    def forward(self, x):
        local = x @ self.weight.t()
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local)
        parts[dist.get_rank()] = local
        return torch.cat(parts, dim=1)


class Checkpointer:
    def __init__(self, model, save_dir):
        self.model, self.save_dir = model, save_dir

    def save(self, name):
        shard = self.model.weight.detach()
        full = torch.empty(shard.shape[0] * dist.get_world_size(), shard.shape[1])
        dist.all_gather_into_tensor(full, shard)
        if dist.get_rank() == 0:
            torch.save({"weight": full}, os.path.join(self.save_dir, name + ".pth"))


class Storage:
    def __init__(self):
        self._latest = {}
        self.iter = 0

    def put_scalars(self, **kwargs):
        for k, v in kwargs.items():
            self._latest[k] = (v, self.iter)

    def latest(self):
        return self._latest


class EvalHook:
    def __init__(self, period, eval_function):
        self._period, self._func = period, eval_function

    def after_step(self, trainer):
        if (trainer.iter + 1) % self._period == 0:
            results = self._func()
            if results:
                trainer.storage.put_scalars(**results)
            dist.barrier()  # dist.synchronize()


class BestCheckpointer:
    def __init__(self, period, checkpointer, val_metric):
        self._period, self._checkpointer, self._val_metric = period, checkpointer, val_metric
        self.best_metric = None

    def _best_checking(self, trainer):
        metric_tuple = trainer.storage.latest().get(self._val_metric)
        flag = torch.zeros(1)
        if dist.get_rank() == 0:
            if metric_tuple is None:
                logger.warning(f"Given val metric {self._val_metric} does not seem to be computed/stored.")
            else:
                latest_metric, _ = metric_tuple
                if not math.isnan(latest_metric) and (self.best_metric is None or latest_metric > self.best_metric):
                    self.best_metric = latest_metric
                    flag += 1
        dist.barrier()  # dist.synchronize()
        dist.broadcast(flag, src=0)
        if flag.item() == 1:
            self._checkpointer.save("model_best")

    def after_step(self, trainer):
        if (trainer.iter + 1) % self._period == 0:
            self._best_checking(trainer)


class Trainer:
    def __init__(self, model, hooks, max_iter):
        self.model, self.hooks, self.max_iter = model, hooks, max_iter
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        self.storage = Storage()
        g = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(4, 3, generator=g), torch.randint(0, 4, (4,), generator=g)

    def run_step(self):
        loss = torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def train(self):
        for self.iter in range(self.max_iter):
            self.storage.iter = self.iter
            self.run_step()
            for hook in self.hooks:
                hook.after_step(self)


def worker():
    rank = dist.get_rank()
    save_dir = os.path.join(tempfile.gettempdir(), f"r38_libai_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    os.makedirs(save_dir, exist_ok=True)
    model = ColumnParallelLinear(3, 4)
    trainer = None

    def eval_function():
        with torch.no_grad():
            logits = model(trainer.x)
        if rank != 0:
            return {}  # the evaluator's results live on the main process only
        return {"acc@1": (logits.argmax(1) == trainer.y).float().mean().item()}

    hooks = [EvalHook(2, eval_function), BestCheckpointer(2, Checkpointer(model, save_dir), "acc@1")]
    trainer = Trainer(model, hooks, max_iter=6)
    trainer.train()
    saved = os.path.exists(os.path.join(save_dir, "model_best.pth"))
    print(f"[rank {rank}] trained {trainer.max_iter} iterations" + (f", model_best.pth saved: {saved}" if rank == 0 else ""))
    dist.barrier()
    if rank == 0:
        shutil.rmtree(save_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
