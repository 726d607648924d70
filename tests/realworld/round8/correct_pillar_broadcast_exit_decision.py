"""Modelled on the fix of YalaLab/pillar-pretrain PR #9 (issue #4): the master rank still decides whether the
experiment's log path already exists, but the decision (``should_exit``) is broadcast from rank 0 with the
existing ``broadcast_object`` utility before anyone returns, so every rank leaves ``main`` together — the fix
the RWKV-Vibe/RWKV-LM-V7 PR #19 review also asks for ("request stop on every rank").

Looks suspicious, is right: a rank-0-only filesystem check and a rank-0-only message and clean-up, followed by
an early ``return -1``; the only collective on the way out is the broadcast that every rank makes.
"""

import os
import shutil
import tempfile
from argparse import Namespace
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def is_master(args):
    return args.rank == 0


def broadcast_object(args, obj, src=0):
    objects = [obj if args.rank == src else None]
    dist.broadcast_object_list(objects, src=src)
    return objects[0]


def _previous_run_left_logs(log_path):
    """Stands in for the cluster: an earlier job with the same name left its log directory behind."""
    os.makedirs(log_path, exist_ok=True)


def main(args):
    if is_master(args):
        _previous_run_left_logs(args.log_path)
    dist.barrier()  # setup done on every rank

    should_exit = False
    if is_master(args) and os.path.exists(args.log_path) and args.resume != "latest":
        print(f"Error. Experiment already exists at {args.log_path}. Use --name to specify a new experiment.")
        shutil.rmtree(os.path.dirname(args.log_path), ignore_errors=True)  # (leave no temp files behind)
        should_exit = True
    should_exit = broadcast_object(args, should_exit)
    if should_exit:
        return -1

    resume_from = None
    if is_master(args) and args.resume == "latest":
        resume_from = os.path.join(args.log_path, "checkpoints", "epoch_latest.pt")
    resume_from = broadcast_object(args, resume_from)

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
    result = main(args)
    assert result == -1, result  # every rank saw the master's decision
    return result


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
