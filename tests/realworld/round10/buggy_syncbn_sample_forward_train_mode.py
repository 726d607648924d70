"""Sample predictions drawn on the main process with a SyncBatchNorm model left in training mode.

Modelled on the image-classification / segmentation scripts that convert BatchNorm with
``nn.SyncBatchNorm.convert_sync_batchnorm`` (torchvision ``references/classification/train.py --sync-bn``,
ultralytics/yolov5 ``--sync-bn``) and then, on the main process only, run a few fixed samples through the
unwrapped model to log predictions; on the reports that a SyncBatchNorm forward made by one process hangs:
pytorch/pytorch issue #44957 ("Sync Batch Norm hangs if i don't call a module in one of the Processes": "All ranks
must call this op the same number of times"), issue #48988 / PR #56982 (no sync in eval mode) and the forum
thread they cite ("validation hangs up when using DDP and SyncBatchNorm"). SyncBatchNorm is the CPU stand-in of
``r10_syncbn.py`` (torch's refuses CPU tensors); its training-mode forward all-gathers the batch statistics.

Bug: the preview runs under ``torch.no_grad()`` but without ``.eval()``. ``no_grad`` does not change the
module's mode, so rank 0's preview forward all-gathers batch statistics that rank 1 never sends, while rank 1
waits in the buffer broadcast that starts the next epoch's DDP forward: both wait until the 20 s timeout.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r10_syncbn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 3
STEPS = 4


def build_model():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def show_predictions(model, samples, epoch):
    with torch.no_grad():
        preds = model(samples).argmax(1)  # BUG # WAITS
    print(f"epoch {epoch}: sample predictions {preds.tolist()}")


def train_one_epoch(model, opt, x, y):
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[step]), y[step])  # WAITS
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
        train_one_epoch(model, opt, x, y)  # WAITS
        if rank == 0:
            show_predictions(model.module, samples, epoch)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
