# Reproduction (shortened) of Lightning-AI/pytorch-lightning examples/fabric/build_your_own_trainer/trainer.py
# @ 7f0c3436cd: fit() sets up loaders, model and optimizer with Fabric, resumes from the latest checkpoint found
# in a checkpoint folder (every rank looks: the folder is on a file system all ranks share), trains epoch after
# epoch with fabric.backward inside the optimizer's closure, and fabric.save's a checkpoint on every rank after
# each epoch. Correct as published (for a checkpoint folder every rank sees).
import os
from functools import partial

import lightning as L
import torch
from tqdm import tqdm


class MyCustomTrainer:
    def __init__(self, max_epochs=1000, max_steps=None, grad_accum_steps=1, limit_train_batches=float("inf"),
                 checkpoint_dir="./checkpoints"):
        self.fabric = L.Fabric()
        self.global_step = 0
        self.grad_accum_steps = grad_accum_steps
        self.current_epoch = 0
        self.max_epochs = max_epochs
        self.max_steps = max_steps
        self.should_stop = False
        self.limit_train_batches = limit_train_batches
        self.checkpoint_dir = checkpoint_dir
        self._current_train_return = None

    def fit(self, model, train_loader, ckpt_path=None):
        self.fabric.launch()
        train_loader = self.fabric.setup_dataloaders(train_loader)
        optimizer = model.configure_optimizers()
        model, optimizer = self.fabric.setup(model, optimizer)
        state = {"model": model, "optim": optimizer}

        # load last checkpoint if available
        if ckpt_path is not None and os.path.isdir(ckpt_path):
            latest_checkpoint_path = self.get_latest_checkpoint(self.checkpoint_dir)
            if latest_checkpoint_path is not None:
                self.load(state, latest_checkpoint_path)
                # check if we even need to train here
                if self.max_epochs is not None and self.current_epoch >= self.max_epochs:
                    self.should_stop = True

        while not self.should_stop:
            self.train_loop(model, optimizer, train_loader, limit_batches=self.limit_train_batches)
            self.current_epoch += 1
            if self.max_epochs is not None and self.current_epoch >= self.max_epochs:
                self.should_stop = True
            self.save(state)
        self.should_stop = False

    def train_loop(self, model, optimizer, train_loader, limit_batches=float("inf")):
        iterable = self.progbar_wrapper(train_loader, total=min(len(train_loader), limit_batches))
        for batch_idx, batch in enumerate(iterable):
            if self.should_stop or batch_idx >= limit_batches:
                break
            should_optim_step = self.global_step % self.grad_accum_steps == 0
            if should_optim_step:
                optimizer.step(partial(self.training_step, model=model, batch=batch, batch_idx=batch_idx))
                optimizer.zero_grad()
            else:
                self.training_step(model=model, batch=batch, batch_idx=batch_idx)
            self.global_step += int(should_optim_step)
            if self.max_steps is not None and self.global_step >= self.max_steps:
                self.should_stop = True
                break

    def training_step(self, model, batch, batch_idx):
        outputs = model.training_step(batch, batch_idx=batch_idx)
        loss = outputs if isinstance(outputs, torch.Tensor) else outputs["loss"]
        self.fabric.backward(loss)
        self._current_train_return = loss.detach()
        return loss

    def progbar_wrapper(self, iterable, total, **kwargs):
        if self.fabric.is_global_zero:
            return tqdm(iterable, total=total, **kwargs)
        return iterable

    def load(self, state, path):
        if state is None:
            state = {}
        remainder = self.fabric.load(path, state)
        self.global_step = remainder.pop("global_step")
        self.current_epoch = remainder.pop("current_epoch")
        if remainder:
            raise RuntimeError(f"Unused Checkpoint Values: {remainder}")

    def save(self, state):
        if state is None:
            state = {}
        state.update(global_step=self.global_step, current_epoch=self.current_epoch)
        self.fabric.save(os.path.join(self.checkpoint_dir, f"epoch-{self.current_epoch:04d}.ckpt"), state)

    @staticmethod
    def get_latest_checkpoint(checkpoint_dir):
        if not os.path.isdir(checkpoint_dir):
            return None
        items = sorted(os.listdir(checkpoint_dir))
        if not items:
            return None
        return os.path.join(checkpoint_dir, items[-1])
