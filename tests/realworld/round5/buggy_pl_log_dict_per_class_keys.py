"""Real Lightning: ``self.log_dict(..., sync_dist=True)`` in ``training_step`` with one key per class present
in the batch, so the ranks log different numbers of keys.

Source: Lightning-AI/pytorch-lightning issue #19106 ("Deadlock on ``log_dict`` with different keys across
ranks": a ``training_step`` that sometimes adds a metric to the dict it logs with ``sync_dist=True``; the
traceback ends in ``_sync_ddp``), and PR #19917, which added to the ``self.log`` docstring that every process
must log the same keys ("a user logged keys inconsistently across ranks, leading to hangs"). Here the extra
keys come from the data, as per-class losses do: a 3-class linear classifier, 8 samples, batch size 2, 2 CPU
processes, gloo DDP; Lightning's distributed sampler gives rank 0 samples 0, 2, 4, 6 and rank 1 samples
1, 3, 5, 7, and rank 1's first batch holds a single class. Needs the real Lightning (REQUIRES).

The bug: ``sync_dist=True`` on a step-level log reduces each value across the ranks as it is logged, one
collective per key (Lightning's ``_sync_ddp``: a barrier, then an all-reduce); rank 0 logs three keys in its
first step and rank 1 two, so their collectives stop pairing up. In a run with stack dumps one rank waited in
that barrier under ``log_dict`` and the other in ``backward``'s gradient all-reduce.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("lightning",)
LABELS = [0, 0, 1, 0, 2, 1, 1, 2]  # rank 0: 0, 1 | 2, 1   rank 1: 0, 0 | 1, 2


def dataset():
    x = torch.randn(len(LABELS), 4, generator=torch.Generator().manual_seed(0))
    return TensorDataset(x, torch.tensor(LABELS))


def worker():
    import lightning.pytorch as pl

    import r5_common

    class Classifier(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 3)

        def training_step(self, batch, batch_idx):
            x, y = batch
            per_sample = F.cross_entropy(self.layer(x), y, reduction="none")
            metrics = {"train_loss": per_sample.mean()}
            for k in y.unique().tolist():
                metrics[f"train_loss_class_{k}"] = per_sample[y == k].mean()  # BUG
            self.log_dict(metrics, sync_dist=True)  # WAITS
            return per_sample.mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    pl.seed_everything(0, verbose=False)
    trainer = r5_common.trainer(r5_common.shared_dir("pl_log_dict_keys"))
    trainer.fit(Classifier(), DataLoader(dataset(), batch_size=2))  # WAITS
    return {k: float(v) for k, v in trainer.callback_metrics.items()}


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
