"""A logger whose ``version`` is the next free ``version_N`` folder, listed lazily the first time it is read; the
checkpoint folder is built from it on every rank without agreeing on it.

Models: Lightning ``CSVLogger`` / ``TensorBoardLogger`` (``version`` property -> ``_get_next_version()``: one more
than the largest ``version_N`` under ``root_dir``; the folders made by the rank-zero-only ``experiment``), issues
#8945 ("Tensorboard logger logdir is not consistent in DDP mode": ``version_24`` on some ranks, ``version_23`` on
others; "won't fix"), #18294 ("Inconsistent version number with DDP"), PR #7403 (the race when ranks "do the
auto-increment" on their own); ``ModelCheckpoint.__resolve_ckpt_dir`` (``<logger.log_dir>/checkpoints``, then
``trainer.strategy.broadcast(ckpt_path)``); ``Trainer.test(ckpt_path="last")``.

What it does: 2 ranks. The log root already holds ``version_0`` from an earlier run. At fit start rank 0 logs the
hyperparameters (which creates ``version_1``), the ranks meet in a barrier, and every rank sets up its checkpoint
callback. Two epochs of DDP training, each ending with ``save_last`` (rank 0 writes ``last.ckpt``, then a
barrier); then "test with the last checkpoint": every rank loads it and the test accuracy is all-reduced.

The bug: the callback's folder comes from ``logger.log_dir`` on each rank. Rank 0 read ``version`` before creating
``version_1``; rank 1 reads it after the barrier, lists ``version_0`` and ``version_1`` and gets ``version_2``.
Rank 0 writes ``version_1/checkpoints/last.ckpt``; at test time rank 1 opens ``version_2/checkpoints/last.ckpt``
and raises ``FileNotFoundError``, and rank 0 waits in the test ``all_reduce``.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_tmp import remove_tmpdir, shared_tmpdir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class CSVLoggerStandIn:
    def __init__(self, save_dir, name="lightning_logs"):
        self.root_dir = os.path.join(save_dir, name)
        self._version = None

    @property
    def version(self):
        if self._version is None:
            self._version = self._get_next_version()
        return self._version

    def _get_next_version(self):
        if not os.path.isdir(self.root_dir):
            return 0
        found = [int(d.split("_")[1]) for d in os.listdir(self.root_dir)
                 if d.startswith("version_") and d.split("_")[1].isdigit()]
        return max(found) + 1 if found else 0

    @property
    def log_dir(self):
        return os.path.join(self.root_dir, f"version_{self.version}")

    def log_hyperparams(self, params):  # rank-zero-only: the experiment's folder is made here
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.log_dir, "hparams.yaml"), "w") as f:
            for k, v in sorted(params.items()):
                f.write(f"{k}: {v}\n")


class LastCheckpoint:
    def setup(self, logger):
        self.dirpath = os.path.join(logger.log_dir, "checkpoints")  # BUG

    @property
    def last_model_path(self):
        return os.path.join(self.dirpath, "last.ckpt")

    def save_last(self, model, epoch):
        if dist.get_rank() == 0:
            os.makedirs(self.dirpath, exist_ok=True)
            torch.save({"epoch": epoch, "state_dict": model.module.state_dict()}, self.last_model_path)
        dist.barrier()


def make_data(rank, n, seed):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, 6, generator=g)
    return list(zip(x.split(8), (x[:, 0] - x[:, 2] > 0).long().split(8)))


def test(model, ckpt_path, batches):
    ckpt = torch.load(ckpt_path, weights_only=True)
    model.module.load_state_dict(ckpt["state_dict"])
    correct = torch.zeros(2)
    with torch.no_grad():
        for x, y in batches:
            correct += torch.tensor([(model.module(x).argmax(-1) == y).sum().item(), len(y)])
    dist.all_reduce(correct)  # WAITS
    return correct[0].item() / correct[1].item(), ckpt["epoch"]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    save_dir = shared_tmpdir("r26_version_")
    try:
        if rank == 0:
            os.makedirs(os.path.join(save_dir, "lightning_logs", "version_0"))  # an earlier run
        dist.barrier()
        logger = CSVLoggerStandIn(save_dir)
        if rank == 0:
            logger.log_hyperparams({"lr": 0.1, "epochs": 2})
        dist.barrier()  # the strategy's setup barrier
        ckpt = LastCheckpoint()
        ckpt.setup(logger)
        model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for x, y in make_data(rank, 32, epoch):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            ckpt.save_last(model, epoch)
        acc, epoch = test(model, ckpt.last_model_path, make_data(rank, 16, 99))  # WAITS
        if rank == 0:
            print(f"test accuracy {acc:.3f} with the checkpoint of epoch {epoch} ({ckpt.last_model_path})", flush=True)
    finally:
        if rank == 0:
            remove_tmpdir(save_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
