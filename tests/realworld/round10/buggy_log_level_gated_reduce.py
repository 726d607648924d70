"""A loss all-reduce for the log line, skipped where the logger is not enabled for INFO.

Modelled on three public pieces put together as training scripts do: transformers' per-process log levels
(``TrainingArguments.get_process_log_level``: ``log_level`` on the main process, ``log_level_replica``
(default ``"warning"``) on the others; the ``no_trainer`` examples' ``logger.setLevel(logging.INFO if
accelerator.is_local_main_process else logging.ERROR)``); the optimisation the Python logging HOWTO recommends
("Optimization": guard expensive arguments with ``if logger.isEnabledFor(logging.DEBUG):``); and a
``reduce_mean`` helper that all-reduces the loss for the log line (``r10_logutils.py``, the helper module of
this pair).

Bug: the guard is a per-rank condition in disguise. Only rank 0's logger is enabled for INFO, so only rank 0
calls ``reduce_mean`` at a log step; rank 1 goes on to the next step, whose DDP gradient all-reduce meets rank
0's one-element loss all-reduce (under torchrun rank 1 waits in the DDP forward of the next step, where DDP
rebuilds its buckets with a broadcast after the first backward).
"""

import logging
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r10_logutils

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

LOG_EVERY = 2
STEPS = 6


def train(model, opt, data, logger):
    x, y = data
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[step]), y[step])  # WAITS
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0 and logger.isEnabledFor(logging.INFO):  # BUG
            logger.info("step %d loss %.4f", step, r10_logutils.reduce_mean(loss).item())  # WAITS


def worker():
    rank = dist.get_rank()
    logger = r10_logutils.setup_logger("r10.train", rank)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(10 + rank)
    data = (torch.randn(STEPS, 4, 8, generator=g), torch.randn(STEPS, 4, 1, generator=g))
    train(model, opt, data, logger)  # WAITS
    logger.warning("done")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
