"""A loss all-reduce for the log line on every rank, the record then dropped by the replicas' log level.

Modelled on transformers' per-process log levels (``TrainingArguments.get_process_log_level``: ``log_level``
on the main process, ``log_level_replica`` (default ``"warning"``) on the others; the ``no_trainer`` examples'
``logger.setLevel(logging.INFO if accelerator.is_local_main_process else logging.ERROR)``) and on the scripts
that reduce the loss for the log line with a ``reduce_mean`` helper (``r10_logutils.py``, the helper module of
this pair); the Python logging HOWTO ("Optimization") describes ``isEnabledFor`` guards, which this script
does not put around the collective.

Correct, though it looks suspicious: the loggers are configured differently per rank and a collective sits in
the argument list of ``logger.info``; but the arguments are evaluated on every rank before ``logger.info``
looks at the level, so every rank makes the all-reduce at every log step, and only rank 0 prints.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r10_logutils

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

LOG_EVERY = 2
STEPS = 6


def train(model, opt, data, logger):
    x, y = data
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[step]), y[step])
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            logger.info("step %d loss %.4f", step, r10_logutils.reduce_mean(loss).item())


def worker():
    rank = dist.get_rank()
    logger = r10_logutils.setup_logger("r10.train", rank)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(10 + rank)
    data = (torch.randn(STEPS, 4, 8, generator=g), torch.randn(STEPS, 4, 1, generator=g))
    train(model, opt, data, logger)
    logger.warning("done")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
