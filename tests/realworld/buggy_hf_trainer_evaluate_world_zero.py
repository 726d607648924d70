"""Hugging Face Trainer: ``trainer.evaluate()`` called only where ``is_world_process_zero()``; the
evaluation loop gathers predictions from every process.

Source: huggingface/transformers src/transformers/trainer.py (``evaluation_loop`` gathers logits and labels
across processes with ``self.accelerator.gather_for_metrics``, so every process must call ``evaluate``) and
huggingface/sentence-transformers PR #3994 (evaluation moved to the main process needed its metrics broadcast
back; an earlier attempt that skipped evaluation on the other ranks was reverted, #3442 → #3463).
Stand-in: tests/realworld/_standins/transformers.
Bug: ``evaluate`` under ``is_world_process_zero()`` (BUG); rank 0 waits in the gather (WAITS).
"""

import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from transformers import Trainer, TrainingArguments

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), num_train_epochs=1)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]
    trainer = Trainer(model=torch.nn.Linear(3, 1), args=args, train_dataset=data, eval_dataset=data[:2])
    trainer.train()
    metrics = {}
    if trainer.is_world_process_zero():  # BUG
        metrics = trainer.evaluate()  # WAITS
        print(metrics)
    trainer.save_model()
    return metrics.get("eval_loss")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
