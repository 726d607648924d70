"""torchvision's classification reference with the evaluation moved under ``if utils.is_main_process()`` —
but ``evaluate`` synchronises its counts through the helper module.

Source: pytorch/vision references/classification/train.py (``evaluate`` calls
``utils.reduce_across_processes(num_processed_samples)`` and ``metric_logger.synchronize_between_processes()``)
and references/classification/utils.py (``reduce_across_processes``: ``dist.barrier()`` then
``dist.all_reduce``); evaluating on the main process only is the shape of Lightning-AI/torchmetrics issue
#938 (test on rank 0 only, a collective inside). The barrier is in another module.
Bug: rank 0 evaluates alone (BUG); inside ``evaluate`` it waits in the helper's barrier (WAITS on the item's
lines that lead there); rank 1 goes on to the next epoch's DDP backward (WAITS), whose all_reduce never
pairs with a barrier.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r2_vision_utils as utils

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def train_one_epoch(model, optimizer, batches):
    for x, y in batches:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()


def evaluate(model, batches):
    processed = 0
    correct = 0
    with torch.inference_mode():
        for x, y in batches:
            correct += int((model(x).argmax(dim=1) == y).sum())
            processed += len(x)
    processed = utils.reduce_across_processes(processed)  # WAITS
    return correct / int(processed.item())


def worker():
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(utils.get_rank())
    batches = [(torch.randn(4, 8, generator=generator), torch.randint(0, 3, (4,), generator=generator)) for _ in range(3)]
    for epoch in range(2):
        train_one_epoch(model, optimizer, batches)  # WAITS
        if utils.is_main_process():
            accuracy = evaluate(model.module, batches)  # BUG WAITS
            print(f"epoch {epoch}: acc {accuracy:.3f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
