"""Hugging Face Trainer: train, evaluate and save_model on every process; only the metrics file is
written under ``is_world_process_zero()``.

Source: huggingface/transformers examples/pytorch/text-classification/run_glue.py (``trainer.train()``,
``trainer.save_model()``, ``metrics = trainer.evaluate(eval_dataset=...)`` on every process) and
src/transformers/trainer.py (``save_metrics``/``save_state`` write only ``if self.is_world_process_zero()``).
Stand-in: tests/realworld/_standins/transformers.
Expected: every rank finishes with the same eval loss.
"""

import json
import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from transformers import Trainer, TrainingArguments

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    args = TrainingArguments(output_dir=box[0], num_train_epochs=1)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]
    trainer = Trainer(model=torch.nn.Linear(3, 1), args=args, train_dataset=data, eval_dataset=data[:2])
    trainer.train()
    trainer.save_model()
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        with open(os.path.join(args.output_dir, "eval_results.json"), "w") as f:
            json.dump(metrics, f)
    return round(metrics["eval_loss"], 6)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
