"""A Lightning callback that stops training on an external request received by rank 0, the flag reduced.

Modelled on the fix of talmolab/sleap-nn PR #471 ("Fix TrainingControllerZMQ DDP stop: use
reduce_boolean_decision"): the training controller listens on a ZMQ socket on the main process only; in
``on_train_batch_end`` rank 0 sets ``trainer.should_stop`` when a "stop" message arrives, and every rank then
replaces its flag with ``trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)`` (true on every
rank if it is true on any), the idiom of Lightning's own ``EarlyStopping``. ``StopRequests`` is a stand-in for the
socket ("stop" arrives on the 3rd poll; only rank 0 has a socket). Real Lightning 2.6 (``Trainer``, ``DDPStrategy``
on gloo, ``Callback``).

Looks suspicious but is right: a rank-0-only condition sets trainer state that ends the training loop, in a
callback that runs every batch; the reduction right after it makes both ranks stop after the same batch.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("lightning",)


class StopRequests:
    """Stand-in for the controller's ZMQ subscriber socket (rank 0 only): a "stop" arrives on the 3rd poll."""

    def __init__(self, stop_on_poll=3):
        self.polls = 0
        self.stop_on_poll = stop_on_poll

    def poll(self):
        self.polls += 1
        return "stop" if self.polls == self.stop_on_poll else None


def make_callback_class():
    import lightning.pytorch as pl

    class TrainingController(pl.Callback):
        def __init__(self):
            self.socket = None

        def setup(self, trainer, pl_module, stage):
            if trainer.is_global_zero:
                self.socket = StopRequests()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.is_global_zero and self.socket.poll() == "stop":
                trainer.should_stop = True
            trainer.should_stop = trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)

    return TrainingController


def make_module_class():
    import lightning.pytorch as pl

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    return Regressor


def worker():
    import lightning.pytorch as pl
    from lightning.pytorch.strategies import DDPStrategy

    pl.seed_everything(0, verbose=False)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    y = x[:, :1] * 2.0
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    trainer = pl.Trainer(
        accelerator="cpu", devices=WORLD_SIZE, num_nodes=1,
        strategy=DDPStrategy(process_group_backend="gloo", timeout=datetime.timedelta(seconds=TIMEOUT)),
        max_epochs=2, callbacks=[make_callback_class()()], logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(make_module_class()(), loader)
    dist.barrier()
    if trainer.is_global_zero:
        print(f"stopped at global step {trainer.global_step}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
