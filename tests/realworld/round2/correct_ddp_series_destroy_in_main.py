"""The DDP tutorial series' torchrun script: a ``Trainer`` holding the DDP model trains, rank 0 saves
snapshots, and ``main`` ends with ``destroy_process_group()`` while the trainer (and its DDP model) is still
alive in ``main``'s frame.

Source: pytorch/examples distributed/ddp-tutorial-series/multigpu_torchrun.py (``main``: ``ddp_setup()``, a
``Trainer`` with ``DDP(model)``, ``trainer.train(total_epochs)``, ``destroy_process_group()``;
``_save_snapshot`` on ``global_rank == 0``) and pytorch/tutorials intermediate_source/ddp_tutorial.rst
(``demo_checkpoint`` ends with ``cleanup()`` = ``dist.destroy_process_group()`` with ``ddp_model`` alive).
pytorch/pytorch issues #56297 and #190489 track torch's own teardown hang of this shape (a process group's
destructor joining gloo's threads while holding the GIL, when the DDP model is freed after the group was
destroyed).
Correct code: every rank makes the same calls; ``ddp_setup`` is the launcher's here.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import destroy_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path):
        self.global_rank = dist.get_rank()
        self.model = DDP(model)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.snapshot_path = snapshot_path
        self.epochs_run = 0

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}
        torch.save(snapshot, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def worker(total_epochs=2, save_every=1, batch_size=8):
    dataset = TensorDataset(torch.randn(64, 10), torch.randn(64, 1))
    train_data = DataLoader(dataset, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(dataset))
    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    with tempfile.TemporaryDirectory() as folder:
        trainer = Trainer(model, train_data, optimizer, save_every, os.path.join(folder, "snapshot.pt"))
        trainer.train(total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
