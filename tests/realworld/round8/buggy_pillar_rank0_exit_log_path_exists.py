"""Modelled on YalaLab/pillar-pretrain issue #4 / PR #9 ("Fix distributed deadlock when experiment log path
exists": in ``src/trainer/main.py``, when ``args.log_path`` already exists and ``--resume`` is not ``"latest"``,
the master rank ``return -1``s "while all other ranks ... hung forever at the next NCCL collective"), with the
``resume_from`` broadcast the PR names as the existing pattern (``broadcast_object``) as that next collective.
The same shape is flagged in the review of RWKV-Vibe/RWKV-LM-V7 PR #19 ("Don't `exit(0)` on only rank 0").

The bug: the "experiment exists" check and its early return run on the master rank only. Rank 0 leaves ``main``
(and, under torchrun, exits cleanly with code 0); rank 1 goes on to the ``resume_from`` broadcast and waits for
a source rank that is gone.
"""

import os
import shutil
import tempfile
from argparse import Namespace
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def is_master(args):
    return args.rank == 0


def broadcast_object(args, obj, src=0):
    objects = [obj if args.rank == src else None]
    dist.broadcast_object_list(objects, src=src)  # WAITS
    return objects[0]


def _previous_run_left_logs(log_path):
    """Stands in for the cluster: an earlier job with the same name left its log directory behind."""
    os.makedirs(log_path, exist_ok=True)


def main(args):
    if is_master(args):
        _previous_run_left_logs(args.log_path)
    dist.barrier()  # setup done on every rank

    if is_master(args) and os.path.exists(args.log_path) and args.resume != "latest":
        print(f"Error. Experiment already exists at {args.log_path}. Use --name to specify a new experiment.")
        shutil.rmtree(os.path.dirname(args.log_path), ignore_errors=True)  # (leave no temp files behind)
        return -1  # BUG

    resume_from = None
    if is_master(args) and args.resume == "latest":
        resume_from = os.path.join(args.log_path, "checkpoints", "epoch_latest.pt")
    resume_from = broadcast_object(args, resume_from)  # WAITS

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
    return 0


def worker():
    base = os.path.join(tempfile.gettempdir(), f"r8_pillar_{os.environ.get('MASTER_PORT', 'lab')}")
    args = Namespace(rank=dist.get_rank(), log_path=os.path.join(base, "pretrain-run"), resume=None)
    return main(args)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
