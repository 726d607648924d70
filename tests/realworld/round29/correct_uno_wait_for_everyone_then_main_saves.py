"""A diffusers-style training loop whose checkpoint block waits for everyone on every rank, then saves on the main process.

Models bytedance/UNO issue #71 (see the buggy twin) with the layout of the diffusers ``train_*.py`` scripts that
UNO's loop follows and huggingface/accelerate's docs on deferred execution: the checkpoint condition
(``accelerator.sync_gradients`` and ``global_step % checkpointing_steps == 0``) is the same on every process, every
process calls ``accelerator.wait_for_everyone()``, and only then is the saving guarded by
``accelerator.is_main_process``.

Written for this corpus (nothing copied). ``Accel`` stands in for ``accelerate.Accelerator`` (DDP wrap, ``no_sync``
while accumulating 2 micro-batches, ``wait_for_everyone`` = ``dist.barrier()``); the "DiT" is a 2-layer MLP with a
frozen first layer, and the checkpoint keeps only the trainable parameters. Both ranks meet in the barrier at
optimizer steps 2 and 4; rank 0 writes ``checkpoint-2`` and ``checkpoint-4``.
"""
import datetime
import os
import shutil
import tempfile
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

GRAD_ACCUM = 2
CHECKPOINTING_STEPS = 2
MAX_STEPS = 4


class Accel:
    """Stand-in for the parts of accelerate.Accelerator that UNO's loop uses."""

    def __init__(self, gradient_accumulation_steps):
        self.process_index = dist.get_rank()
        self.is_main_process = self.process_index == 0
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self._micro = 0
        self.sync_gradients = False

    def prepare(self, model):
        return DDP(model)

    def accumulate(self, model):
        self._micro += 1
        self.sync_gradients = self._micro % self.gradient_accumulation_steps == 0
        return nullcontext() if self.sync_gradients else model.no_sync()

    def backward(self, loss):
        loss.backward()

    def unwrap_model(self, model):
        return model.module

    def wait_for_everyone(self):
        dist.barrier()


def project_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_uno_{tag}")


def worker():
    accelerator = Accel(GRAD_ACCUM)
    rank = accelerator.process_index
    torch.manual_seed(0)
    dit = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    dit[0].requires_grad_(False)  # frozen backbone part; only the head is trained
    dit = accelerator.prepare(dit)
    optimizer = torch.optim.AdamW([p for p in dit.parameters() if p.requires_grad], lr=1e-2)
    g = torch.Generator().manual_seed(10 + rank)
    if accelerator.is_main_process:
        shutil.rmtree(project_dir(), ignore_errors=True)
    global_step = 0
    micro = 0
    while global_step < MAX_STEPS:
        x = torch.randn(4, 8, generator=g)
        target = torch.randn(4, 8, generator=g)
        micro += 1
        with accelerator.accumulate(dit):
            loss = nn.functional.mse_loss(dit(x), target)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                optimizer.step()
                optimizer.zero_grad()
        if accelerator.sync_gradients:
            global_step += 1
            if accelerator.sync_gradients and global_step % CHECKPOINTING_STEPS == 0:
                accelerator.wait_for_everyone()
                if accelerator.is_main_process:
                    print(f"saving checkpoint in global_step={global_step}", flush=True)
                    save_path = os.path.join(project_dir(), f"checkpoint-{global_step}")
                    os.makedirs(save_path, exist_ok=True)
                    unwrapped = accelerator.unwrap_model(dit)
                    state = unwrapped.state_dict()
                    trainable = [k for k, v in unwrapped.named_parameters() if v.requires_grad]
                    torch.save({k: state[k] for k in trainable}, os.path.join(save_path, "dit.pt"))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        print(f"saved: {sorted(os.listdir(project_dir()))}; last loss {loss.item():.4f}", flush=True)
        shutil.rmtree(project_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
