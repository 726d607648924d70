"""Correct: ``final_epoch`` is computed on every rank, outside the rank-0 block, so the validation condition is
defined everywhere and every rank reaches the epoch-end broadcast of ``stop``.

Source: ultralytics/ultralytics issue #22598 ("Training fails on ``final_epoch`` referenced before assignment since it
is not set on ranks > 0 (hit when when val is False)", 2025-11) and PR #22607 ("Fix undefined ``final_epoch`` for DDP
training when ``val=False``"); ``ultralytics/engine/trainer.py`` ``BaseTrainer._do_train``:

    if RANK in {-1, 0}:
        final_epoch = epoch + 1 >= self.epochs
        self.ema.update_attr(...)
    # Validation
    if self.args.val or final_epoch or self.stopper.possible_stop or self.stop:

"final_epoch not set on other ranks, training fails after 1 epoch when val is set to false and the conditional
doesn't short circuit" (``UnboundLocalError``). Rank 0 goes on to the end of the epoch, where DDP training
broadcasts rank 0's ``stop`` flag: ``dist.broadcast_object_list(broadcast_list, 0)``.

Here two ranks train a tiny model for three epochs of two batches (a DDP-style gradient all-reduce per batch) with
``val=False``. After epoch 1 rank 1 raises ``UnboundLocalError``; rank 0 waits in the stop-flag broadcast -- that is
the buggy twin.

The fix (the PR): "Moves final_epoch calculation outside the rank-restricted block so it's always defined before
validation runs"; the EMA update stays on rank 0.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class Args:
    epochs = 3
    val = False
    patience = 100


class EarlyStopping:
    def __init__(self, patience):
        self.best_fitness, self.best_epoch, self.patience = 0.0, 0, patience
        self.possible_stop = False

    def __call__(self, epoch, fitness):
        if fitness is None:
            return False
        if fitness >= self.best_fitness:
            self.best_epoch, self.best_fitness = epoch, fitness
        delta = epoch - self.best_epoch
        self.possible_stop = delta >= (self.patience - 1)
        return delta >= self.patience


class Trainer:
    def __init__(self, rank):
        self.rank = rank
        self.args = Args()
        self.epochs = self.args.epochs
        self.stopper, self.stop = EarlyStopping(self.args.patience), False
        self.fitness = None
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 1)
        g = torch.Generator().manual_seed(rank)
        self.batches = [(torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)) for _ in range(2)]

    def optimizer_step(self, x, y):
        self.model.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        for p in self.model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        with torch.no_grad():
            for p in self.model.parameters():
                p -= 0.05 * p.grad
        return loss.item()

    def validate(self):
        with torch.no_grad():
            loss = sum(torch.nn.functional.mse_loss(self.model(x), y).item() for x, y in self.batches)
        return {"val/loss": loss}, -loss

    def _do_train(self):
        RANK = self.rank
        epoch = 0
        while True:
            for x, y in self.batches:
                self.optimizer_step(x, y)

            if RANK in {-1, 0}:
                pass  # self.ema.update_attr(self.model, include=[...])

            final_epoch = epoch + 1 >= self.epochs

            # Validation
            if self.args.val or final_epoch or self.stopper.possible_stop or self.stop:
                self.metrics, self.fitness = self.validate()

            if RANK in {-1, 0}:
                self.stop |= self.stopper(epoch + 1, self.fitness) or final_epoch

            # Early Stopping
            if RANK != -1:  # if DDP training
                broadcast_list = [self.stop if RANK == 0 else None]
                dist.broadcast_object_list(broadcast_list, 0)
                self.stop = broadcast_list[0]
            if self.stop:
                break  # must break all DDP ranks
            epoch += 1
        return epoch + 1


def worker():
    rank = dist.get_rank()
    epochs = Trainer(rank)._do_train()
    print(f"rank {rank}: {epochs} epochs completed")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
