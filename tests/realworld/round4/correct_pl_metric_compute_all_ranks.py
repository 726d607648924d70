"""Real Lightning + torchmetrics: ``Metric.compute()`` in ``on_train_epoch_end`` on every rank, printed by
rank 0 only.

Source: Lightning-AI/pytorch-lightning issue #20223 ("metric.compute() hangs when using DDP with multiple
GPUs") and issue #19604 ("Deadlock when manually logging from on_train_epoch_end"): ``compute()`` syncs the
metric state across processes, so it has to run on every rank; only what is done with the result (here a
print) is left to rank 0. The metric is updated in ``training_step`` and reset after compute, as the
torchmetrics Lightning integration page (docs/source/pages/lightning.rst) shows.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("lightning", "torchmetrics")


def worker():
    import lightning.pytorch as pl
    import torchmetrics

    import r4_common

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            self.train_mae = torchmetrics.MeanAbsoluteError()
            self.epoch_mae = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            out = self.layer(x)
            self.train_mae.update(out, y)
            return torch.nn.functional.mse_loss(out, y)

        def on_train_epoch_end(self):
            mae = self.train_mae.compute()
            self.train_mae.reset()
            self.epoch_mae.append(float(mae))
            if self.trainer.is_global_zero:
                print(f"epoch {self.current_epoch}: train MAE {float(mae):.4f}")

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    pl.seed_everything(0, verbose=False)
    model = Regressor()
    trainer = r4_common.trainer(r4_common.shared_dir("pl_metric_all_ranks"), max_epochs=2)
    trainer.fit(model, DataLoader(r4_common.toy_dataset(), batch_size=4))
    return model.epoch_mae


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
