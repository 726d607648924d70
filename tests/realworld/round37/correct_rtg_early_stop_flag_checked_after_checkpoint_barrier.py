"""RTG (isi-nlp/rtg) -- early stopping in distributed training, synchronised across workers with a flag file.

Source: isi-nlp/rtg issue #11 ("Early stop on distributed training: barrier calls are not in sync"), fixed in
v0.6.1 by commits dce3c42 / 66c830b ("Sync early stopping across worker processes"); modelled on
``rtg/module/tfmnmt.py`` ``TransformerTrainer.train`` (the check-point block) and ``rtg/module/trainer.py``
``EarlyStopper`` / ``TrainerState``.

What it does: a DDP model trains for a fixed number of batches. Every ``check_point`` batches the global main
process -- and only it, it alone holds the validation data -- runs validation, writes a check point and feeds the
validation loss to the ``EarlyStopper``; then every rank meets in ``distr.barrier()``.

The fix (commit 66c830b, released in v0.6.1): the main process only *records* its decision -- it touches an
``_EARLY_STOPPED`` file in the (shared) model directory -- and every rank then meets in the check-point barrier and
checks the file afterwards, so all ranks leave the batch loop after the same check point. A stale flag from an earlier
run is removed before training (here by rank 0 alone, before the directory is shared, where rtg has every rank check
and unlink it).
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

STEPS = 12
CHECK_POINT = 3
DIM = 4


class EarlyStopper:
    """rtg's EarlyStopper: stop when the older measure is no worse than the best recent one."""

    def __init__(self, patience=1, buf=1, signi_round=3):
        self.patience, self.buf, self.signi_round = patience, buf, signi_round
        self.measures = []
        self.cur_step = 0

    def step(self):
        self.cur_step += 1

    def validation(self, val):
        self.measures.append(val)

    def is_stop(self):
        if len(self.measures) < self.patience + self.buf + 1:
            return False
        old = self.measures[-self.patience - self.buf:-self.patience]
        old = sum(old) / len(old)
        recent = self.measures[-self.patience:]
        return round(old, self.signi_round) <= round(min(recent), self.signi_round)


def make_data(rank):
    g = torch.Generator().manual_seed(7)
    w = torch.randn(DIM, DIM, generator=g)
    x = torch.randn(STEPS * WORLD_SIZE, 8, DIM, generator=g)
    train = [(xb, xb @ w) for xb in x[rank::WORLD_SIZE]]  # each worker reads its own shard
    vx = torch.randn(4, 8, DIM, generator=g)
    val = [(xb, -(xb @ w)) for xb in vx]  # held-out pairs the model gets worse at as it fits the training pairs
    return train, val


class TransformerTrainer:
    def __init__(self, model, model_dir):
        self.model = model
        self.model_dir = model_dir
        self.opt = torch.optim.SGD(model.parameters(), lr=0.05)
        self.loss_func = nn.MSELoss()
        self.is_global_main = dist.get_rank() == 0

    def run_valid_epoch(self, val_data):
        with torch.no_grad():
            losses = [self.loss_func(self.model.module(x), y).item() for x, y in val_data]
        return sum(losses) / len(losses)

    def make_check_point(self, step, train_loss, val_loss):
        torch.save({"step": step, "train_loss": train_loss, "val_loss": val_loss,
                    "model": self.model.module.state_dict()},
                   os.path.join(self.model_dir, f"model_{step:03d}.pkl"))

    def train(self, train_data, val_data, check_point):
        stopper = EarlyStopper(patience=1, buf=1)
        early_stopped_flag = os.path.join(self.model_dir, "_EARLY_STOPPED")
        unsaved_state = False
        total_loss, n = 0.0, 0
        for batch_count, (x, y) in enumerate(train_data, start=1):
            loss = self.loss_func(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            stopper.step()
            unsaved_state = True
            total_loss, n = total_loss + loss.item(), n + 1

            if batch_count % check_point == 0:
                train_loss, total_loss, n = total_loss / n, 0.0, 0
                if self.is_global_main:
                    val_loss = self.run_valid_epoch(val_data)
                    self.make_check_point(batch_count, train_loss, val_loss)
                    print(f"[rank 0] check point at batch {batch_count}: train {train_loss:.4f} val {val_loss:.4f}")
                    stopper.validation(val_loss)
                    if stopper.is_stop():
                        print(f"[rank 0] stopping at batch {batch_count}: val loss did not improve")
                        open(early_stopped_flag, "w").close()

                dist.barrier()
                unsaved_state = False
                if os.path.exists(early_stopped_flag):
                    break

        # End of training
        if unsaved_state and self.is_global_main:
            val_loss = self.run_valid_epoch(val_data)
            self.make_check_point(batch_count, total_loss / max(n, 1), val_loss)
        dist.barrier()
        return os.path.exists(early_stopped_flag)


def worker():
    rank = dist.get_rank()
    if rank == 0:
        model_dir = tempfile.mkdtemp(prefix="r37_rtg_")
        stale = os.path.join(model_dir, "_EARLY_STOPPED")
        if os.path.exists(stale):
            os.unlink(stale)
    box = [model_dir if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    model_dir = box[0]

    torch.manual_seed(0)
    model = DDP(nn.Linear(DIM, DIM))
    train_data, val_data = make_data(rank)
    trainer = TransformerTrainer(model, model_dir)
    early_stopped = trainer.train(train_data, val_data if rank == 0 else None, CHECK_POINT)
    print(f"[rank {rank}] training done; early stopped: {early_stopped}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(model_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
