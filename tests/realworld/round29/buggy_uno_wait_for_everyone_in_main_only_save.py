"""A diffusers-style training loop whose checkpoint block calls ``accelerator.wait_for_everyone()`` on the main process only.

Models bytedance/UNO issue #71 ("accelerator.wait_for_everyone() stucked": the checkpoint block of UNO's
``train.py`` is entered under ``if accelerator.sync_gradients and accelerator.is_main_process and global_step %
args.checkpointing_steps == 0:`` and calls ``accelerator.wait_for_everyone()`` inside it, "this step get stucked";
the thread's diagnosis: "the accelerator.is_main_process have conflict with the accelerator.wait_for_everyone()"),
with huggingface/accelerate's ``Accelerator.wait_for_everyone`` (a ``torch.distributed.barrier`` on every process),
``accumulate`` / ``sync_gradients`` and ``unwrap_model``, and the diffusers ``train_*.py`` scripts that UNO's loop
follows (checkpoint every ``checkpointing_steps`` optimizer steps, trainable-parameter ``state_dict`` saved).

Written for this corpus (nothing copied). ``Accel`` is a small stand-in for ``accelerate.Accelerator`` on an
initialised gloo group (DDP wrap, ``no_sync`` while accumulating 2 micro-batches, ``wait_for_everyone`` =
``dist.barrier()``). The "DiT" is a 2-layer MLP with a frozen first layer; the checkpoint keeps only the parameters
that require grad, as UNO does.

The bug: the barrier sits inside the main-process-only checkpoint block. At optimizer step 2 rank 0 waits in it,
while rank 1, which skipped the block, goes on to step 3 and waits in its synchronising backward (DDP's gradient
all-reduce).
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

KIND = "buggy"
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
        loss.backward()  # WAITS

    def unwrap_model(self, model):
        return model.module

    def wait_for_everyone(self):
        dist.barrier()  # WAITS


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
            accelerator.backward(loss)  # WAITS
            if accelerator.sync_gradients:
                optimizer.step()
                optimizer.zero_grad()
        if accelerator.sync_gradients:
            global_step += 1
            if accelerator.sync_gradients and accelerator.is_main_process and global_step % CHECKPOINTING_STEPS == 0:
                print(f"saving checkpoint in global_step={global_step}", flush=True)
                save_path = os.path.join(project_dir(), f"checkpoint-{global_step}")
                os.makedirs(save_path, exist_ok=True)
                accelerator.wait_for_everyone()  # BUG # WAITS
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
