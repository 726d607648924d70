"""Every rank saves each checkpoint with DCP; rank 0 alone purges the stale ones; every rank loads the latest.

Source: pytorch/torchtitan, torchtitan/components/checkpoint.py: ``dcp.save(states, checkpoint_id=step-N)`` on
all ranks, ``_purge_stale_checkpoints`` only when ``dist.get_rank() == 0`` (``keep_latest_k``), and
``dcp.load`` of the newest step on resume. ``dcp.save`` ends with a collective, so no rank is still writing a
step when rank 0 deletes an older one.
"""

import os
import re
import shutil

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from r3_shared import job_dir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 8
KEEP_LATEST_K = 1


def purge_stale_checkpoints(folder: str) -> None:
    if KEEP_LATEST_K > 0 and dist.get_rank() == 0 and os.path.isdir(folder):
        steps = sorted((int(re.search(r"step-(\d+)", n).group(1)), os.path.join(folder, n)) for n in os.listdir(folder))
        for _, path in steps[:-KEEP_LATEST_K]:
            shutil.rmtree(path, ignore_errors=True)


def worker():
    folder = os.path.join(job_dir("titan"), "checkpoint")
    torch.manual_seed(0)  # the same replicated weights on every rank (DCP keeps one copy of a replicated tensor)
    model = torch.nn.Linear(4, 4)
    for step in (1, 2, 3):
        with torch.no_grad():
            model.weight.add_(1.0)
        dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(folder, f"step-{step}"))
        purge_stale_checkpoints(folder)
    restored = torch.nn.Linear(4, 4)
    state = {"model": restored.state_dict()}
    dcp.load(state, checkpoint_id=os.path.join(folder, "step-3"))
    restored.load_state_dict(state["model"])
    assert torch.equal(restored.weight, model.weight)
    return sorted(os.listdir(folder)) if dist.get_rank() == 0 else None


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
