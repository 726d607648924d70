"""Stale output directory cleared by rank 0 before any rank opens its log file in it; rank 0 archives the logs.

Models detectron2 ``detectron2/utils/logger.py`` ``setup_logger`` (every worker logs to a file in the output
directory: ``log.txt`` on rank 0, ``log.txt.rank{N}`` on the others, opened in append mode) and
``engine/defaults.py`` ``default_setup`` (the output directory made on the main process before the logger is
set up), together with the ``--overwrite`` idiom of many training and preprocessing scripts
(``if os.path.exists(args.output_dir) and args.overwrite: shutil.rmtree(args.output_dir)`` then
``os.makedirs``). A learner's DDP loop: rank 0 clears the directory a previous run left behind (stand-in:
``previous_run_left_output``), a barrier, then every rank sets up its file logger, trains, and at the end
rank 0 packs every rank's log into ``run_summary.txt`` while the others wait for it in a barrier.
"""
import logging
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def previous_run_left_output(out_dir):
    """Stand-in for the outside world: an earlier run of the job left its files behind."""
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "log.txt"), "w") as f:
        f.write("old run: diverged at iteration 40\n")
    torch.save({"iteration": 40}, os.path.join(out_dir, "model_0000040.pth"))


def shared_output_dir():
    holder = [None]
    if dist.get_rank() == 0:
        base = tempfile.mkdtemp(prefix="r23_outdir_")
        previous_run_left_output(os.path.join(base, "output"))
        holder[0] = base
    dist.broadcast_object_list(holder, src=0)
    return holder[0], os.path.join(holder[0], "output")


def prepare_output_dir(out_dir, overwrite):
    if os.path.exists(out_dir) and overwrite:
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)


def log_file(out_dir, rank):
    return os.path.join(out_dir, "log.txt" if rank == 0 else f"log.txt.rank{rank}")


def setup_logger(out_dir, rank):
    logger = logging.getLogger("r23.outdir")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(log_file(out_dir, rank), mode="a")
    handler.setFormatter(logging.Formatter(f"[rank {rank}] %(message)s"))
    logger.addHandler(handler)
    return logger


def archive_run(out_dir, world_size):
    with open(os.path.join(out_dir, "run_summary.txt"), "w") as summary:
        for rank in range(world_size):
            with open(log_file(out_dir, rank)) as f:
                lines = f.read().splitlines()
            summary.write(f"rank {rank}: {len(lines)} lines, last: {lines[-1]}\n")
    print(open(os.path.join(out_dir, "run_summary.txt")).read(), end="")


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    base, out_dir = shared_output_dir()
    logger = None
    try:
        if rank == 0:
            prepare_output_dir(out_dir, overwrite=True)
        dist.barrier()
        logger = setup_logger(out_dir, rank)
        logger.info("starting, world size %d", world)
        torch.manual_seed(0)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(rank)
        for it in range(20):
            x = torch.randn(8, 4, generator=g)
            loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 5 == 4:
                logger.info("iteration %d loss %.4f", it, loss.item())
                if rank == 0:
                    torch.save(model.module.state_dict(), os.path.join(out_dir, f"model_{it:07d}.pth"))
        logger.info("done")
        for h in logger.handlers:
            h.flush()
        dist.barrier()
        if rank == 0:
            archive_run(out_dir, world)
        dist.barrier()
    finally:
        if logger is not None:
            for h in list(logger.handlers):
                h.close()
                logger.removeHandler(h)
        if rank == 0:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
