"""pytorch/examples DDP tutorial series (torchrun version): a Trainer class whose local rank 0 saves a
snapshot every few epochs; no collective sits under that condition.

Source: pytorch/examples distributed/ddp-tutorial-series/multigpu_torchrun.py: ``Trainer.__init__`` reads
``self.gpu_id = int(os.environ["LOCAL_RANK"])``, wraps the model in DDP, ``_run_epoch`` calls
``train_data.sampler.set_epoch(epoch)`` and ``_run_batch`` for each batch; ``train`` saves with
``if self.gpu_id == 0 and epoch % self.save_every == 0: self._save_snapshot(epoch)`` (a torch.save).
Changed for the lab: CPU/gloo, random data, no GPU placement.
Expected: every rank finishes all epochs.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.snapshot_path = snapshot_path
        self.epochs_run = 0

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch):
        torch.save({"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)
        return max_epochs


def worker():
    dataset = TensorDataset(torch.randn(24, 20), torch.randn(24, 1))
    train_data = DataLoader(dataset, batch_size=4, shuffle=False, sampler=DistributedSampler(dataset))
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    trainer = Trainer(model, train_data, optimizer, save_every=2,
                      snapshot_path=os.path.join(tempfile.mkdtemp(), "snapshot.pt"))
    return trainer.train(max_epochs=3)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
