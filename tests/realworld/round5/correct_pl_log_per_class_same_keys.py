"""Real Lightning: per-class training losses logged with ``sync_dist=True`` under the same keys on every
rank, whatever classes a rank's batch holds.

Source: Lightning-AI/pytorch-lightning PR #19917 (the ``self.log`` docstring: with ``sync_dist=True`` every
process must log the same keys, after the hang of issue #19106) and the logging documentation
(docs/source-pytorch/extensions/logging.rst: ``on_epoch=True`` accumulates over the epoch, ``reduce_fx``
chooses the reduction, ``sync_dist=True`` reduces across devices). Here: a 3-class linear classifier, 8
samples, batch size 2, 2 CPU processes, gloo DDP, as in the matching buggy item; each step logs, for every
class, the summed loss and the sample count of that class in the batch (zero when absent), accumulated over
the epoch with ``reduce_fx="sum"``. Needs the real Lightning (REQUIRES).

Correct: both ranks log the same seven keys in every step, so the reductions pair up; the epoch totals agree
on both ranks and count all 8 samples.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("lightning",)
LABELS = [0, 0, 1, 0, 2, 1, 1, 2]
CLASSES = 3


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
            for k in range(CLASSES):
                mask = y == k
                metrics[f"loss_sum_class_{k}"] = per_sample[mask].sum()
                metrics[f"count_class_{k}"] = mask.sum().float()
            self.log_dict(metrics, on_step=False, on_epoch=True, sync_dist=True, reduce_fx="sum")
            return per_sample.mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    pl.seed_everything(0, verbose=False)
    trainer = r5_common.trainer(r5_common.shared_dir("pl_log_same_keys"))
    trainer.fit(Classifier(), DataLoader(dataset(), batch_size=2))
    totals = {k: round(float(v), 5) for k, v in sorted(trainer.callback_metrics.items())}
    assert sum(totals[f"count_class_{k}"] for k in range(CLASSES)) == len(LABELS), totals
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, totals)
    assert all(entry == totals for entry in everyone), everyone
    return totals


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
