"""A callback that registers an optimizer step pre-hook, added on the main process only (buggy).

Models: huggingface/transformers ``trainer_callback.py`` (``TrainerCallback.on_train_begin`` / ``on_step_end``,
``CallbackHandler.call_event``; the logging integrations act only when ``state.is_world_process_zero``),
mosaicml/composer ``callbacks/speed_monitor.py`` (throughput counted across ranks), and
``torch.optim.Optimizer.register_step_pre_hook`` (a hook run at the start of every ``optimizer.step()``).

A small ``Trainer`` runs DDP over a ``DistributedSampler``; its callbacks are a progress printer and a
``TokenThroughputMonitor`` whose ``on_train_begin`` registers a step pre-hook on the optimizer. The hook all-reduces
the number of non-padding tokens of the step (they differ per rank), so every rank must run it. BUG: the script adds the
monitor to the callback list only ``if dist.get_rank() == 0`` ("it is a logger; loggers live on the main
process"), so the step pre-hook -- and its ``all_reduce`` -- exists on rank 0 alone. Nothing distributed appears
near that line: rank 0's first ``optimizer.step()`` enters the hook's all-reduce while rank 1 has already stepped
and gone on to the next DDP forward / backward; the two ranks' collectives no longer pair up.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB, SEQ, EPOCHS = 32, 12, 2


def make_dataset():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (32, SEQ), generator=g)
    lengths = torch.randint(4, SEQ + 1, (32,), generator=g)
    mask = torch.arange(SEQ)[None, :] < lengths[:, None]
    ids = ids * mask
    return TensorDataset(ids, mask)


class Callback:
    def on_train_begin(self, trainer):
        pass

    def on_step_end(self, trainer, step, loss):
        pass


class ProgressPrinter(Callback):
    def on_step_end(self, trainer, step, loss):
        if trainer.is_world_process_zero and step % 4 == 0:
            print(f"step {step} loss {loss:.4f}", flush=True)


class TokenThroughputMonitor(Callback):
    def __init__(self):
        self.tokens_this_step = 0
        self.total_tokens = 0

    def on_train_begin(self, trainer):
        trainer.optimizer.register_step_pre_hook(self._count_global_tokens)
        trainer.monitor = self

    def _count_global_tokens(self, optimizer, args, kwargs):
        t = torch.tensor([self.tokens_this_step], dtype=torch.long)
        dist.all_reduce(t)  # WAITS
        self.total_tokens += int(t.item())

    def on_step_end(self, trainer, step, loss):
        if trainer.is_world_process_zero and step % 4 == 0:
            print(f"  tokens seen (all ranks): {self.total_tokens}", flush=True)


class Trainer:
    def __init__(self, model, loader, callbacks):
        self.model = DDP(model)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.callbacks = callbacks
        self.monitor = None
        self.is_world_process_zero = dist.get_rank() == 0

    def call_event(self, event, *args):
        for cb in self.callbacks:
            getattr(cb, event)(self, *args)

    def train(self):
        self.call_event("on_train_begin")
        step = 0
        for epoch in range(EPOCHS):
            self.loader.sampler.set_epoch(epoch)
            for ids, mask in self.loader:
                if self.monitor is not None:
                    self.monitor.tokens_this_step = int(mask.sum())
                logits = self.model(ids)  # WAITS
                loss = nn.functional.cross_entropy(logits[mask], ids[mask])
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()  # WAITS
                self.call_event("on_step_end", step, loss.item())
                step += 1


def worker():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(VOCAB, 16), nn.Linear(16, VOCAB))
    ds = make_dataset()
    loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True, seed=0))
    callbacks = [ProgressPrinter()]
    if dist.get_rank() == 0:
        callbacks.append(TokenThroughputMonitor())  # BUG
    trainer = Trainer(model, loader, callbacks)
    trainer.train()  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
