"""Two hyperparameter-sweep trials packed into one job as subgroups, whose checkpoint helper holds the trial's
ranks at a barrier on the trial's own group.

Models: ``torch.distributed.new_subgroups`` (one subgroup per block of ranks; every collective that should stay in
a subgroup passes ``group=``), DDP's ``process_group=`` argument; pytorch/pytorch issue #81291 (independent SPMD
programs inside one MPMD job), issue #130102 (collectives on sub-groups); the checkpoint helpers of training
scripts that close with a barrier.

What it does: 4 ranks run 2 trials of 2 ranks each (``new_subgroups(group_size=2)``): trial 0 with
``lr=0.05`` saving every 2 steps, trial 1 with ``lr=0.2`` saving every 3 steps, 6 steps each, DDP on the trial's
group. The save helper has the trial's first rank write the weights and then waits at
``dist.barrier(group=group)``, so the trials save independently (three times and twice). At the end each trial's
first rank writes its final loss to ``trial_T.json``, every rank waits at a world barrier and rank 0 prints the
best trial; a last world barrier keeps the folder until rank 0 has read it.
"""

import json
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

TRIALS = [{"lr": 0.05, "save_every": 2}, {"lr": 0.2, "save_every": 3}]
STEPS = 6


def save_checkpoint(model, path, group):
    if dist.get_rank(group) == 0:
        torch.save(model.module.state_dict(), path)
    dist.barrier(group=group)  # the trial's ranks only


def run_trial(trial, config, group, out_dir):
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 1), process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(10 + dist.get_rank())
    for step in range(1, STEPS + 1):
        x = torch.randn(8, 6, generator=g)
        loss = (model(x) - x[:, :2].sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % config["save_every"] == 0:
            save_checkpoint(model, os.path.join(out_dir, f"trial{trial}-step{step}.pt"), group)
    final = torch.tensor([loss.item()])
    dist.all_reduce(final, group=group)
    if dist.get_rank(group) == 0:
        with open(os.path.join(out_dir, f"trial_{trial}.json"), "w") as f:
            json.dump({"trial": trial, "lr": config["lr"], "loss": final.item() / dist.get_world_size(group)}, f)


def worker():
    rank = dist.get_rank()
    name = [tempfile.mkdtemp(prefix="r25_sweep_") if rank == 0 else None]
    dist.broadcast_object_list(name, src=0)
    out_dir = name[0]
    try:
        group, _ = dist.new_subgroups(group_size=2)
        trial = rank // 2
        run_trial(trial, TRIALS[trial], group, out_dir)
        dist.barrier()
        if rank == 0:
            results = []
            for t in range(len(TRIALS)):
                with open(os.path.join(out_dir, f"trial_{t}.json")) as f:
                    results.append(json.load(f))
            best = min(results, key=lambda r: r["loss"])
            print(f"best trial {best['trial']} (lr {best['lr']}): loss {best['loss']:.3f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
