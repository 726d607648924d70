"""torchvision's classification reference: a DDP training epoch and an evaluation on every rank, the
meters synchronised through the helper module (a barrier and an all_reduce inside it), the summary printed by
the main process.

Source: pytorch/vision references/classification/train.py (``train_one_epoch``; ``evaluate`` on every rank,
``num_processed_samples = utils.reduce_across_processes(num_processed_samples)``,
``metric_logger.synchronize_between_processes()``, then a print) and references/classification/utils.py
(``reduce_across_processes``: ``dist.barrier()`` then ``dist.all_reduce``). The collectives are in another
module, reached through ``import r2_vision_utils as utils``.
Correct: every rank trains, evaluates and synchronises; only printing is left to the main process.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r2_vision_utils as utils

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


def train_one_epoch(model, optimizer, batches):
    logger = utils.MetricLogger()
    for x, y in batches:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logger.update(loss=loss.item(), n=len(x))
    return logger


def evaluate(model, batches):
    logger = utils.MetricLogger()
    processed = 0
    with torch.inference_mode():
        for x, y in batches:
            accuracy = (model(x).argmax(dim=1) == y).float().mean()
            logger.update(acc1=accuracy.item(), n=len(x))
            processed += len(x)
    processed = utils.reduce_across_processes(processed)
    logger.synchronize_between_processes()
    return int(processed.item()), logger


def worker():
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(utils.get_rank())
    batches = [(torch.randn(4, 8, generator=generator), torch.randint(0, 3, (4,), generator=generator)) for _ in range(3)]
    for epoch in range(2):
        train_log = train_one_epoch(model, optimizer, batches)
        processed, eval_log = evaluate(model, batches[:2])
        if utils.is_main_process():
            print(f"epoch {epoch}: {processed} samples; {train_log}; {eval_log}")
    return processed


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
