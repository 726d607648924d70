"""MMClassification's ``MMClsWandbHook``: the epoch hook's evaluation on every rank, only the W&B logging on rank 0.

Models: open-mmlab/mmpretrain (then mmclassification) issue #1233 ("[Bug] Multi-GPU hangs on medium to big datasets
and with MMClsWandbHook"): multi-GPU training with the W&B hook hung after the first epoch. The maintainer's
diagnosis: "it's caused by a wrong ``@master_only``", fixed in PR #1242 ("Fix a bug caused MMClsWandbHook stuck").
The hook's ``after_train_epoch`` is decorated ``@master_only``; with ``log_checkpoint_metadata`` and a checkpoint
interval different from the evaluation interval, ``_get_ckpt_metadata`` evaluates the model itself, and under
``DistEvalHook`` it does so with ``multi_gpu_test(..., gpu_collect=True)`` -- collectives, run on rank 0 alone.
Code modelled (written here, not copied): ``mmcls/core/hook/wandblogger_hook.py`` (``before_run`` finding the
``CheckpointHook`` and ``DistEvalHook``, ``after_train_epoch``, ``_get_ckpt_metadata``,
``_log_ckpt_as_artifact``), ``mmcls/apis/test.py`` ``multi_gpu_test`` / ``collect_results_gpu`` (results
pickled into byte tensors, shapes and padded parts all-gathered), mmcv's ``EpochBasedRunner`` calling the hooks in
priority order (checkpoint, evaluation, loggers) and ``master_only``.

The fix modelled: ``after_train_epoch`` is no longer ``@master_only``; every rank runs ``_get_ckpt_metadata`` (and so
``multi_gpu_test``), and only rank 0 logs the artifact. (The diff of PR #1242 was not read; this is the fix the
diagnosis -- a wrong ``@master_only`` -- points to, written here.)
2 ranks, a linear classifier under DDP, 3 epochs of 4 steps, checkpoints every epoch, evaluation every 2 epochs:
rank 0 logs an artifact with its metadata after every epoch, the evaluation hook prints the accuracy after epoch
2, both ranks finish.
"""

import datetime
import functools
import os
import pickle
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_EPOCHS = 3
STEPS_PER_EPOCH = 4


def work_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_mmcls_{tag}")


def master_only(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if dist.get_rank() == 0:
            return func(*args, **kwargs)

    return wrapper


def collect_results_gpu(result_part, size):
    part_tensor = torch.tensor(bytearray(pickle.dumps(result_part)), dtype=torch.uint8)
    shape_tensor = torch.tensor([part_tensor.numel()])
    shape_list = [shape_tensor.clone() for _ in range(dist.get_world_size())]
    dist.all_gather(shape_list, shape_tensor)
    shape_max = max(int(s) for s in shape_list)
    part_send = torch.zeros(shape_max, dtype=torch.uint8)
    part_send[: part_tensor.numel()] = part_tensor
    part_recv_list = [torch.zeros(shape_max, dtype=torch.uint8) for _ in range(dist.get_world_size())]
    dist.all_gather(part_recv_list, part_send)
    ordered = []
    parts = [pickle.loads(bytes(recv[: int(shape)].tolist())) for recv, shape in zip(part_recv_list, shape_list)]
    for res in zip(*parts):
        ordered.extend(res)
    return ordered[:size]


def multi_gpu_test(model, data_loader, gpu_collect=True):
    model.eval()
    results = []
    with torch.no_grad():
        for x, _ in data_loader:
            results.extend(torch.softmax(model(x), dim=-1).tolist())
    model.train()
    return collect_results_gpu(results, data_loader["size"])


class ValLoader(dict):
    def __init__(self, x, y, rank, world):
        super().__init__(size=len(x))
        self.batches = [(x[i::world][j : j + 4], y[i::world][j : j + 4]) for i in [rank] for j in range(0, len(x) // world, 4)]
        self.labels = y

    def __iter__(self):
        return iter(self.batches)


class CheckpointHook:
    priority = 50

    def __init__(self, interval):
        self.interval = interval

    def after_train_epoch(self, runner):
        if (runner.epoch + 1) % self.interval == 0:
            self._save_checkpoint(runner)

    @master_only
    def _save_checkpoint(self, runner):
        torch.save(runner.model.module.state_dict(), os.path.join(work_dir(), f"epoch_{runner.epoch + 1}.pth"))


class DistEvalHook:
    priority = 70

    def __init__(self, dataloader, interval):
        self.dataloader = dataloader
        self.interval = interval
        self.results = None

    def after_train_epoch(self, runner):
        if (runner.epoch + 1) % self.interval == 0:
            self.results = multi_gpu_test(runner.model, self.dataloader, gpu_collect=True)
            if dist.get_rank() == 0:
                print(f"Epoch(val) [{runner.epoch + 1}] accuracy_top-1: {evaluate(self.results, self.dataloader.labels):.2f}", flush=True)


def evaluate(results, labels):
    preds = torch.tensor(results).argmax(-1)
    return 100.0 * (preds == labels[: len(preds)]).float().mean().item()


class MMClsWandbHook:
    priority = 90

    def __init__(self, log_checkpoint=True, log_checkpoint_metadata=True):
        self.log_checkpoint = log_checkpoint
        self.log_checkpoint_metadata = log_checkpoint_metadata
        self.artifacts = []

    def before_run(self, runner):
        for hook in runner.hooks:
            if isinstance(hook, CheckpointHook):
                self.ckpt_hook = hook
            if isinstance(hook, DistEvalHook):
                self.eval_hook = hook
        self.val_dataloader = self.eval_hook.dataloader

    def after_train_epoch(self, runner):
        if self.log_checkpoint and (runner.epoch + 1) % self.ckpt_hook.interval == 0:
            metadata = self._get_ckpt_metadata(runner) if self.log_checkpoint_metadata else None
            if dist.get_rank() == 0:
                self._log_ckpt_as_artifact(runner.epoch, [f"epoch_{runner.epoch + 1}", "latest"], metadata)

    def _get_ckpt_metadata(self, runner):
        if self.ckpt_hook.interval == self.eval_hook.interval:
            results = self.eval_hook.results
        else:
            results = multi_gpu_test(runner.model, self.val_dataloader, gpu_collect=True)
        return {"epoch": runner.epoch + 1, "accuracy_top-1": evaluate(results, self.val_dataloader.labels)}

    def _log_ckpt_as_artifact(self, epoch, aliases, metadata=None):
        self.artifacts.append((f"epoch_{epoch + 1}.pth", aliases, metadata))
        print(f"logged W&B artifact epoch_{epoch + 1}.pth {aliases} {metadata}", flush=True)


class EpochBasedRunner:
    def __init__(self, model, optimizer, hooks):
        self.model = model
        self.optimizer = optimizer
        self.hooks = sorted(hooks, key=lambda h: h.priority)
        self.epoch = 0

    def call_hook(self, fn_name):
        for hook in self.hooks:
            if hasattr(hook, fn_name):
                getattr(hook, fn_name)(self)

    def run(self, batches):
        self.call_hook("before_run")
        for self.epoch in range(MAX_EPOCHS):
            for x, y in batches[self.epoch]:
                loss = nn.functional.cross_entropy(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            self.call_hook("after_train_epoch")
        print(f"[rank {dist.get_rank()}] training done, last loss {loss.item():.4f}", flush=True)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        shutil.rmtree(work_dir(), ignore_errors=True)
        os.makedirs(work_dir())
    dist.barrier()
    torch.manual_seed(0)
    model = DDP(nn.Linear(10, 3))
    g = torch.Generator().manual_seed(rank + 1)
    batches = [[(torch.randn(8, 10, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(STEPS_PER_EPOCH)] for _ in range(MAX_EPOCHS)]
    gv = torch.Generator().manual_seed(99)
    val_x, val_y = torch.randn(16, 10, generator=gv), torch.randint(0, 3, (16,), generator=gv)
    hooks = [CheckpointHook(interval=1), DistEvalHook(ValLoader(val_x, val_y, rank, world), interval=2), MMClsWandbHook()]
    runner = EpochBasedRunner(model, torch.optim.SGD(model.parameters(), lr=0.1), hooks)
    runner.run(batches)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(work_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
