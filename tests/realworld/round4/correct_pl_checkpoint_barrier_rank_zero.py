"""Real Lightning: ``ModelCheckpoint`` on a ``sync_dist`` metric, then ``trainer.strategy.barrier()`` and a
``rank_zero_only`` report of the best checkpoint.

Source: Lightning-AI/pytorch-lightning, src/lightning/pytorch/callbacks/model_checkpoint.py (every rank runs
the callback; the monitored value must agree across ranks, which ``self.log(..., sync_dist=True)`` ensures;
the save goes through ``trainer.save_checkpoint``, itself a collective) and the fix given in issues #5865 /
#11242 (hangs after validation with a per-rank monitor: "adding ``sync_dist=True`` in ``self.log``"). After
``fit`` every rank calls ``trainer.strategy.barrier()`` so the checkpoint file is complete before rank 0
alone (``rank_zero_only``) reads it back.
"""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("lightning",)


def worker():
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.utilities import rank_zero_only

    import r4_common

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), sync_dist=True)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    @rank_zero_only
    def report(path):
        state = torch.load(path, weights_only=False)
        print(f"best checkpoint {os.path.basename(path)} at epoch {state['epoch']}")

    pl.seed_everything(0, verbose=False)
    root = r4_common.shared_dir("pl_ckpt_barrier")
    checkpoint = ModelCheckpoint(dirpath=root, monitor="val_loss", save_top_k=1)
    trainer = r4_common.trainer(root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint])
    data = r4_common.toy_dataset()
    trainer.fit(Regressor(), DataLoader(data, batch_size=4), DataLoader(data, batch_size=4))
    trainer.strategy.barrier("best-checkpoint-written")
    report(checkpoint.best_model_path)
    return checkpoint.best_model_path


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
