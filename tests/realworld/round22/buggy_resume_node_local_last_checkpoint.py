"""Round 22: a resumed two-node job whose second node finds no ``last_checkpoint`` and starts from iteration 0.

Models: detectron2 ``DefaultTrainer.resume_or_load`` / ``Checkpointer.resume_or_load`` (the ``last_checkpoint`` tag
file next to ``model_XXXXXXX.pth``, ``start_iter = iteration + 1``), ``PeriodicCheckpointer`` saving on the main
process only (``comm.is_main_process()``), and detectron2 issue #1732 "Make resume_or_load support machines without a
shared filesystem" (maintainer: "only the first machine loads the checkpoint and the other machine does not ... the
workers in your setup do not share a filesystem"); axolotl issue #884 and gpt-neox issue #765 report the same setup.

What it does: four processes stand for two nodes of two GPUs; each node's ``OUTPUT_DIR`` is its own folder (a
stand-in for a node-local disk).  The script runs the job twice, as a pre-empted run and its resubmission: the first
run trains iterations 0-3 and checkpoints after iteration 3 (main process only, as detectron2 does); the second run
calls ``resume_or_load(resume=True)`` and trains up to ``MAX_ITER``.

The bug: ``resume_or_load`` reads the tag file of the rank's own node.  Node 0 resumes at iteration 4 (two
iterations left), node 1 finds nothing and starts at 0 (six iterations).  DDP copies rank 0's weights at
construction, so nothing looks wrong until node 0 has finished its two iterations and enters the end-of-training
``comm.synchronize()`` while node 1 is still in its third iteration's backward: the job hangs until the process-group
timeout, far from the line that picked the iteration.
"""
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20
GPUS_PER_NODE = 2  # stand-in: the four processes are two "nodes" of two
MAX_ITER = 6
CHECKPOINT_PERIOD = 4


def is_main_process():
    return dist.get_rank() == 0


def synchronize():
    dist.barrier()  # WAITS


def node_output_dir(root):
    # stand-in for cfg.OUTPUT_DIR on a node-local disk
    path = os.path.join(root, f"node{dist.get_rank() // GPUS_PER_NODE}", "output")
    os.makedirs(path, exist_ok=True)
    return path


class Checkpointer:
    """The parts of fvcore/detectron2's Checkpointer this script uses."""

    def __init__(self, model, save_dir):
        self.model = model
        self.save_dir = save_dir

    def save(self, name, **extra):
        if not is_main_process():
            return
        path = os.path.join(self.save_dir, f"{name}.pth")
        torch.save({"model": self.model.module.state_dict(), **extra}, path)
        with open(os.path.join(self.save_dir, "last_checkpoint"), "w") as f:
            f.write(f"{name}.pth")

    def has_checkpoint(self):
        return os.path.exists(os.path.join(self.save_dir, "last_checkpoint"))

    def get_checkpoint_file(self):
        with open(os.path.join(self.save_dir, "last_checkpoint")) as f:
            return os.path.join(self.save_dir, f.read().strip())

    def resume_or_load(self, resume=True):
        if resume and self.has_checkpoint():  # BUG
            ckpt = torch.load(self.get_checkpoint_file())
            self.model.module.load_state_dict(ckpt["model"])
            return ckpt["iteration"] + 1
        return 0


def batch_for(iteration):
    g = torch.Generator().manual_seed(1000 * iteration + dist.get_rank())
    x = torch.randn(8, 6, generator=g)
    return x, x.sum(dim=1, keepdim=True)


def run_job(root, stop_after):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    checkpointer = Checkpointer(model, node_output_dir(root))
    start_iter = checkpointer.resume_or_load(resume=True)
    for iteration in range(start_iter, min(stop_after, MAX_ITER)):
        x, y = batch_for(iteration)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
        if (iteration + 1) % CHECKPOINT_PERIOD == 0:
            checkpointer.save(f"model_{iteration:07d}", iteration=iteration)
    synchronize()  # WAITS
    return start_iter


def worker():
    box = [tempfile.mkdtemp(prefix="r22_resume_") if is_main_process() else None]
    dist.broadcast_object_list(box, src=0)
    root = box[0]
    try:
        run_job(root, stop_after=CHECKPOINT_PERIOD)  # the first submission, pre-empted after 4 iterations
        start = run_job(root, stop_after=MAX_ITER)  # WAITS
        print(f"rank {dist.get_rank()}: resumed at iteration {start}", flush=True)
        synchronize()
    finally:
        if is_main_process():
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
