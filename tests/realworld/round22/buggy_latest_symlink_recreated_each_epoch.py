"""Round 22: a ``latest.pth`` symlink re-created with ``os.symlink`` after every epoch's checkpoint on rank 0.

Models: mmcv ``EpochBasedRunner.save_checkpoint`` (``filename_tmpl='epoch_{}.pth'``, ``create_symlink=True``: a
``latest.pth`` link to the newest file, made with ``mmcv.symlink``, which removes an existing link first --
``if overwrite and osp.lexists(dst): os.remove(dst)``), the ``symlink_force`` helpers many training repos carry for the
same reason (``except OSError as e: if e.errno == errno.EEXIST: os.remove(link); os.symlink(...)``), Lightning's
``_link_checkpoint`` (unlinks an existing ``last.ckpt`` on global zero before linking), and the DDP tutorial's
"save on rank 0, load everywhere after a barrier" pattern.

What it does: two processes train a small DDP model for three epochs.  After each epoch rank 0 writes
``epoch_N.pth`` and points ``latest.pth`` at it; at the end every rank reloads ``latest.pth`` to evaluate.

The bug: the runner's ``save_checkpoint`` calls ``os.symlink`` directly.  Epoch 1 creates the link; at the end of
epoch 2 the link exists, so rank 0 raises ``FileExistsError`` inside its rank-0-only save, while rank 1 has already
started epoch 3 and waits in its first backward's gradient all-reduce.
"""
import os
import os.path as osp
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20
EPOCHS = 3
ITERS_PER_EPOCH = 4


class EpochRunner:
    """The slice of mmcv's EpochBasedRunner this script needs."""

    def __init__(self, model, optimizer, work_dir):
        self.model = model
        self.optimizer = optimizer
        self.work_dir = work_dir
        self.epoch = 0
        self.rank = dist.get_rank()

    def train_epoch(self):
        g = torch.Generator().manual_seed(100 * self.epoch + self.rank)
        for _ in range(ITERS_PER_EPOCH):
            x = torch.randn(8, 5, generator=g)
            loss = nn.functional.mse_loss(self.model(x), x.mean(dim=1, keepdim=True))
            self.optimizer.zero_grad()
            loss.backward()  # WAITS
            self.optimizer.step()
        self.epoch += 1

    def save_checkpoint(self, out_dir, filename_tmpl="epoch_{}.pth", create_symlink=True):
        filename = filename_tmpl.format(self.epoch)
        filepath = osp.join(out_dir, filename)
        torch.save({"meta": {"epoch": self.epoch}, "state_dict": self.model.module.state_dict()}, filepath)
        if create_symlink:
            dst_file = osp.join(out_dir, "latest.pth")
            os.symlink(filename, dst_file)  # BUG

    def run(self):
        while self.epoch < EPOCHS:
            self.train_epoch()  # WAITS
            if self.rank == 0:
                self.save_checkpoint(self.work_dir)


def evaluate_latest(work_dir):
    ckpt = torch.load(osp.join(work_dir, "latest.pth"))
    model = nn.Linear(5, 1)
    model.load_state_dict(ckpt["state_dict"])
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        return ckpt["meta"]["epoch"], nn.functional.mse_loss(model(x), x.mean(dim=1, keepdim=True)).item()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r22_symlink_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    work_dir = box[0]
    try:
        torch.manual_seed(0)
        model = DDP(nn.Linear(5, 1))
        runner = EpochRunner(model, torch.optim.SGD(model.parameters(), lr=0.05), work_dir)
        runner.run()  # WAITS
        dist.barrier()
        epoch, loss = evaluate_latest(work_dir)
        print(f"rank {rank}: latest.pth is epoch {epoch}, eval mse {loss:.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
