"""Correct: every rank waits for rank 0's checkpoint at the end of training before checking whether the best
checkpoint's folder exists, so every rank sets ``best_model_checkpoint`` and enters the ``load_best_model_at_end``
barrier.

Source: huggingface/optimum-habana PR #2230 ("Synchronize processes when saving model", 2025-08), about
``GaudiTrainer`` (``optimum/habana/transformers/trainer.py``) built on transformers 4.51's ``Trainer``:
``_save_checkpoint`` saves the checkpoint (only the main process writes, ``args.should_save``) and a few lines later
sets ``self.state.best_model_checkpoint`` only ``if os.path.exists(best_checkpoint_dir)``; at the end of ``train``,
``if args.load_best_model_at_end and self.state.best_model_checkpoint is not None:`` the ranks wait in
``dist.barrier()`` before ``_load_best_model()``. The PR reports that the script hangs: ``os.path.exists`` gives
different answers on different processes ("a race condition on this directory check - i.e., a process (probably rank
zero) writes the model weights, but before it finishes other ranks try to check for the existence of this
directory"), so ``best_model_checkpoint`` is set on some ranks and ``None`` on others. The same bug in upstream
transformers is PR #40923.

Here two ranks train three steps (a DDP-style gradient all-reduce per step), evaluate and save at the last step.
Rank 0 needs about a second to serialise the weights before the folder appears; rank 1, which writes nothing, checks
for the folder at once, finds nothing and keeps ``best_model_checkpoint = None``. At the end rank 0 waits in the
barrier before loading the best model; rank 1 skips it and leaves (the buggy twin).

The fix (the PR): "an additional synchronization barrier before the directory existence check", and "to make sure
that performance is not degraded during training, the synchronization is only performed at the training end" -- here
a barrier when the saving step is the last one.
"""

import contextlib
import glob
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 3
SAVE_STEPS = 3


class TrainerState:
    def __init__(self):
        self.global_step = 0
        self.best_metric = None
        self.best_model_checkpoint = None


def shared_tmp_dir(prefix):
    """A folder every rank sees (rank 0 makes it and broadcasts its path), with one presence marker per rank."""
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    open(os.path.join(box[0], f".alive{dist.get_rank()}"), "w").close()
    return box[0]


def release_tmp_dir(path):
    """The last rank to leave removes the folder; no collective, since a rank may leave on an error."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(path, f".alive{dist.get_rank()}"))
    if not glob.glob(os.path.join(path, ".alive*")):
        shutil.rmtree(path, ignore_errors=True)

def training_step(model, x, y):
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():  # what DDP's reducer does after backward
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    return loss.detach()


def evaluate(model, x, y):
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model(x), y)
    dist.all_reduce(loss)
    return {"eval_loss": loss.item() / dist.get_world_size()}


def save_model(model, output_dir):
    if dist.get_rank() == 0:  # args.should_save: only the main process writes
        state = {k: v.clone() for k, v in model.state_dict().items()}
        time.sleep(1.0)  # serialising the weights of a real model takes a while
        os.makedirs(output_dir, exist_ok=True)
        torch.save(state, os.path.join(output_dir, "model.pt"))


def save_checkpoint(model, state, metrics, run_dir):
    checkpoint_folder = f"checkpoint-{state.global_step}"
    output_dir = os.path.join(run_dir, checkpoint_folder)
    save_model(model, output_dir)
    metric_value = metrics["eval_loss"]
    if state.best_metric is None or metric_value < state.best_metric:
        state.best_metric = metric_value
        best_checkpoint_dir = os.path.join(run_dir, checkpoint_folder)
        if state.global_step == MAX_STEPS:
            dist.barrier()  # the PR: wait for rank 0's save at training end
        if os.path.exists(best_checkpoint_dir):
            state.best_model_checkpoint = best_checkpoint_dir


def train(model, x, y, run_dir):
    state = TrainerState()
    for _ in range(MAX_STEPS):
        training_step(model, x, y)
        state.global_step += 1
        if state.global_step % SAVE_STEPS == 0:
            metrics = evaluate(model, x, y)
            save_checkpoint(model, state, metrics, run_dir)
    # load_best_model_at_end=True
    if state.best_model_checkpoint is not None:
        dist.barrier()
        best = torch.load(os.path.join(state.best_model_checkpoint, "model.pt"))
        model.load_state_dict(best)
    return state


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    run_dir = shared_tmp_dir("bl_r42_habana_")
    try:
        state = train(model, x, y, run_dir)
        print(f"rank {rank}: done, best checkpoint {state.best_model_checkpoint}")
    finally:
        release_tmp_dir(run_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
