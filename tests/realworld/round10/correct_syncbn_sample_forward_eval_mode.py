"""Sample predictions drawn on the main process with a SyncBatchNorm model switched to eval mode first.

Modelled on the image-classification / segmentation scripts that convert BatchNorm with
``nn.SyncBatchNorm.convert_sync_batchnorm`` (torchvision ``references/classification/train.py --sync-bn``,
ultralytics/yolov5 ``--sync-bn``) and then, on the main process only, run a few fixed samples through the
unwrapped model to log predictions; the eval-mode rule of SyncBatchNorm is pytorch/pytorch issue #48988 / PR
#56982 ("SyncBatchNorm should behave as a regular BN layer in eval mode"), the answer to the hangs of issue
#44957 and the forum thread "validation hangs up when using DDP and SyncBatchNorm". SyncBatchNorm is the CPU
stand-in of ``r10_syncbn.py`` (torch's refuses CPU tensors); its training-mode forward all-gathers the batch
statistics, its eval-mode forward uses the running statistics and communicates nothing.

Correct, though it looks suspicious: a forward pass through a SyncBatchNorm model under ``if rank == 0``; but
the preview calls ``.eval()`` on the unwrapped module first (no statistics gather, and no DDP buffer broadcast,
since it bypasses the DDP wrapper) and restores ``.train()`` afterwards.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r10_syncbn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 3
STEPS = 4


def build_model():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def show_predictions(model, samples, epoch):
    model.eval()
    with torch.no_grad():
        preds = model(samples).argmax(1)
    model.train()
    print(f"epoch {epoch}: sample predictions {preds.tolist()}")


def train_one_epoch(model, opt, x, y):
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[step]), y[step])
        loss.backward()
        opt.step()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(r10_syncbn.convert_sync_batchnorm(build_model()))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(20 + rank)
    x = torch.randn(STEPS, 8, 6, generator=g)
    y = torch.randint(0, 3, (STEPS, 8), generator=g)
    samples = torch.randn(4, 6, generator=torch.Generator().manual_seed(99))
    for epoch in range(EPOCHS):
        model.train()
        train_one_epoch(model, opt, x, y)
        if rank == 0:
            show_predictions(model.module, samples, epoch)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
