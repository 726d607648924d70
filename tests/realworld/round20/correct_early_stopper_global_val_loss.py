"""Early stopping with the usual ``EarlyStopper`` class (patience, min_delta, a counter) fed the GLOBAL validation
loss: every rank evaluates its ``DistributedSampler`` shard, the squared-error sum and the row count are
all-reduced, and each rank's stopper sees the same number, so every rank breaks out of the epoch loop at the same
epoch. The best checkpoint is written by rank 0 only.

Models: ultralytics/yolov5 PR #4576 ("EarlyStopping works correctly on Single-GPU but not on DDP ... the train loop
breaking only for RANK 0, and then training hangs") and PR #8345 (the stop flag broadcast to every rank),
ACEsuit/mace PR #1216 (patience exit made collective), Lightning-AI/pytorch-lightning issue #379, the
``EarlyStopper``/``EarlyStopping`` classes of the tutorials (Bjarten/early-stopping-pytorch) and the
``EarlyStoppingState.step`` of huggingface/accelerate issue #3380.

Correct: the value passed to ``early_stop`` is the same on every rank. The validation rows are the same 32 rows as
in the buggy twin: the odd rows (rank 1's shard) come from a drifted site whose targets have the opposite sign.
"""
import datetime
import io

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_EPOCHS = 8
W_TRUE = torch.tensor([1.0, -2.0, 0.5, 1.5, -1.0, 2.0])


class EarlyStopper:
    def __init__(self, patience=2, min_delta=0.0):
        self.patience = patience
        self.min_delta = min_delta
        self.counter = 0
        self.min_validation_loss = float("inf")

    def early_stop(self, validation_loss):
        if validation_loss < self.min_validation_loss:
            self.min_validation_loss = validation_loss
            self.counter = 0
        elif validation_loss > self.min_validation_loss + self.min_delta:
            self.counter += 1
            if self.counter >= self.patience:
                return True
        return False


def make_sets():
    g = torch.Generator().manual_seed(3)
    xt = torch.randn(64, 6, generator=g)
    train = TensorDataset(xt, xt @ W_TRUE)
    xv = torch.randn(32, 6, generator=g)
    yv = xv @ W_TRUE
    yv[1::2] = -yv[1::2]  # stand-in: the odd validation rows come from a drifted site
    return train, TensorDataset(xv, yv)


def train_one_epoch(model, loader, opt):
    model.train()
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    sums = torch.zeros(2, dtype=torch.float64)
    for x, y in loader:
        err = model(x).squeeze(-1) - y
        sums += torch.tensor([err.pow(2).sum().item(), len(y)], dtype=torch.float64)
    dist.all_reduce(sums)  # every rank gets the loss over the whole validation set
    return (sums[0] / sums[1]).item()


def save_best_rank0(model, buf):
    if dist.get_rank() == 0:
        buf.seek(0)
        torch.save(model.module.state_dict(), buf)


def worker():
    rank = dist.get_rank()
    train_ds, val_ds = make_sets()
    train_sampler = DistributedSampler(train_ds, seed=0)
    train_loader = DataLoader(train_ds, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=8, sampler=DistributedSampler(val_ds, shuffle=False))

    net = nn.Linear(6, 1)
    nn.init.zeros_(net.weight)
    nn.init.zeros_(net.bias)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    stopper = EarlyStopper(patience=2)
    best_buf = io.BytesIO()  # stand-in for best.pt

    for epoch in range(MAX_EPOCHS):
        train_sampler.set_epoch(epoch)
        train_one_epoch(model, train_loader, opt)
        val_loss = evaluate(model, val_loader)
        if val_loss <= stopper.min_validation_loss:
            save_best_rank0(model, best_buf)
        if rank == 0:
            print(f"epoch {epoch} val_loss {val_loss:.4f}", flush=True)
        if stopper.early_stop(val_loss):
            print(f"rank {rank}: early stop at epoch {epoch}", flush=True)
            break
    dist.barrier()  # everyone done before the final export
    if rank == 0:
        print("best checkpoint bytes", len(best_buf.getvalue()), flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
