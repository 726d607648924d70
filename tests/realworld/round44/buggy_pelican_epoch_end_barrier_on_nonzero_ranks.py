"""PELICAN's Trainer: the epoch-end barrier is in the ``else:`` branch of the rank-0 save/log block.

Source: abogatskiy/PELICAN PR #15 ("Hotfix", 2024: "Fixed a bug in distributed training causing hanging after
epoch 1 due to incorrect usage of dist.barrier()"), commit 3553a8f "hotfix for hanging on barrier during DDP
training"; modelled on ``src/trainer/trainer.py`` ``Trainer.train``, ``Trainer.train_epoch`` (barrier at the start of
every epoch) and ``Trainer.predict`` (per-batch ``all_gather`` of predictions and targets).

What the item does: a small regression network wrapped in DDP trains for two epochs of three batches on two ranks.
After each epoch every rank predicts its share of the validation set, gathering predictions and targets batch by
batch; rank 0 then saves a checkpoint and logs the metrics.

The bug: ``if self.device_id <= 0: save and log ... else: torch.distributed.barrier()`` -- the non-zero ranks make
one barrier per epoch that rank 0 never makes. Epoch 0 ends with rank 1 in that barrier; it pairs with rank 0's
barrier at the start of epoch 1, so rank 1 is one collective behind: rank 0's first gradient all-reduce of epoch 1
meets rank 1's start-of-epoch barrier and the job stops ("hanging after epoch 1").
"""

import datetime
import io

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_EPOCH = 2
BATCHES_PER_EPOCH = 3


def all_gather(tensor):
    gathered = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor)
    return torch.cat(gathered)


class Trainer:
    def __init__(self):
        self.device_id = dist.get_rank()
        torch.manual_seed(0)
        self.model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        generator = torch.Generator().manual_seed(self.device_id)
        self.train_batches = [(torch.randn(8, 6, generator=generator), torch.randn(8, 1, generator=generator))
                              for _ in range(BATCHES_PER_EPOCH)]
        self.valid_batches = [(torch.randn(8, 6, generator=generator), torch.randn(8, 1, generator=generator))
                              for _ in range(2)]
        self.checkpoint = io.BytesIO()
        self.epoch = 0

    def train(self):
        for epoch in range(NUM_EPOCH):
            self.epoch = epoch
            self.train_epoch()  # WAITS
            valid_predict, valid_targets = self.predict()
            if self.device_id <= 0:
                self._save_checkpoint()
                self.log_predict(valid_predict, valid_targets, "valid")
            else:
                torch.distributed.barrier()  # BUG

    def train_epoch(self):
        if self.device_id >= 0:
            torch.distributed.barrier()  # WAITS
        self.model.train()
        for features, targets in self.train_batches:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(features), targets)
            loss.backward()  # WAITS
            self.optimizer.step()

    def predict(self):
        self.model.eval()
        all_predict, all_targets = [], []
        with torch.no_grad():
            for features, targets in self.valid_batches:
                all_predict.append(all_gather(self.model.module(features)))
                all_targets.append(all_gather(targets))
        return torch.cat(all_predict), torch.cat(all_targets)

    def _save_checkpoint(self):
        self.checkpoint = io.BytesIO()
        torch.save({"epoch": self.epoch, "model_state": self.model.module.state_dict()}, self.checkpoint)

    def log_predict(self, predict, targets, split):
        print(f"epoch {self.epoch} {split} mse {torch.nn.functional.mse_loss(predict, targets).item():.4f}")


def worker():
    trainer = Trainer()
    trainer.train()  # WAITS
    test_predict, test_targets = trainer.predict()  # the final evaluation in ``Trainer.evaluate``
    if trainer.device_id <= 0:
        trainer.log_predict(test_predict, test_targets, "test")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
