"""Stand-in for Hugging Face transformers' ``TrainingArguments`` and ``Trainer`` (DDP over gloo).

Mirrors huggingface/transformers ``src/transformers/training_args.py``: ``process_index``,
``world_size``, ``should_save`` (true on process 0), ``main_process_first`` (non-main processes
``dist.barrier()`` on entry; the main process calls ``dist.barrier()`` in a ``finally`` on exit) — and
``src/transformers/trainer.py``: ``is_world_process_zero``; ``evaluate`` runs the prediction loop on every
process and gathers logits and labels across processes (``accelerator.gather_for_metrics``, an
all_gather) before computing metrics; ``save_model`` writes only where ``args.should_save`` (no collective
for plain DDP); ``train`` runs through the DDP-wrapped model.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


@dataclass
class TrainingArguments:
    output_dir: str
    num_train_epochs: int = 1
    learning_rate: float = 0.1
    local_rank: int = field(default_factory=lambda: int(os.environ.get("LOCAL_RANK", -1)))

    @property
    def process_index(self) -> int:
        return dist.get_rank() if dist.is_initialized() else 0

    @property
    def world_size(self) -> int:
        return dist.get_world_size() if dist.is_initialized() else 1

    @property
    def should_save(self) -> bool:
        return self.process_index == 0

    @contextmanager
    def main_process_first(self, local: bool = True, desc: str = "work"):
        if self.world_size > 1:
            is_main_process = self.process_index == 0
            try:
                if not is_main_process:
                    dist.barrier()
                yield
            finally:
                if is_main_process:
                    dist.barrier()
        else:
            yield


def _gather(tensor: torch.Tensor) -> torch.Tensor:
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor.contiguous())
    return torch.cat(out)


class Trainer:
    def __init__(self, model: torch.nn.Module, args: TrainingArguments, train_dataset=None, eval_dataset=None,
                 compute_metrics=None) -> None:
        self.args = args
        self.model = model
        self.model_wrapped = DistributedDataParallel(model) if args.world_size > 1 else model
        self.train_dataset = train_dataset or []
        self.eval_dataset = eval_dataset or []
        self.compute_metrics = compute_metrics

    def is_world_process_zero(self) -> bool:
        return self.args.process_index == 0

    def is_local_process_zero(self) -> bool:
        return int(os.environ.get("LOCAL_RANK", 0)) == 0

    def train(self) -> None:
        optimizer = torch.optim.SGD(self.model_wrapped.parameters(), lr=self.args.learning_rate)
        for _ in range(self.args.num_train_epochs):
            for x, y in self.train_dataset:
                loss = torch.nn.functional.mse_loss(self.model_wrapped(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

    def evaluate(self, eval_dataset=None) -> dict:
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        preds, labels = [], []
        with torch.no_grad():  # _wrap_model(training=False) does not wrap in DDP: evaluation runs under no_grad
            for x, y in dataset:
                preds.append(self.model(x))
                labels.append(y)
        all_preds, all_labels = _gather(torch.cat(preds)), _gather(torch.cat(labels))
        metrics = {"eval_loss": torch.nn.functional.mse_loss(all_preds, all_labels).item()}
        if self.compute_metrics is not None:
            metrics.update(self.compute_metrics(all_preds, all_labels))
        return metrics

    def save_model(self, output_dir: str | None = None) -> None:
        output_dir = output_dir or self.args.output_dir
        if self.args.should_save:
            os.makedirs(output_dir, exist_ok=True)
            torch.save(self.model.state_dict(), os.path.join(output_dir, "pytorch_model.bin"))
