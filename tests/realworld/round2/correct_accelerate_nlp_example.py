"""accelerate's nlp_example with a small model on synthetic data: ``Accelerator``, ``prepare``,
``accelerator.backward``, evaluation through ``gather_for_metrics``, ``accelerator.print`` and
``accelerator.end_training()`` at the end of the training function.

Source: huggingface/accelerate examples/nlp_example.py (``training_function``: ``Accelerator(cpu=...)``,
``accelerator.prepare(model, optimizer, train_dataloader, eval_dataloader)``, ``accelerator.backward(loss)``,
``accelerator.gather_for_metrics((predictions, batch["labels"]))``, ``accelerator.print``,
``accelerator.end_training()``) and src/accelerate/accelerator.py (``end_training`` calls
``self.state.destroy_process_group()``, i.e. ``torch.distributed.destroy_process_group()``, while the
prepared DDP model is still referenced by the function). Needs the real accelerate (REQUIRES).
Correct code: every rank makes the same calls.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

from accelerate import Accelerator
from accelerate.utils import set_seed

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0
REQUIRES = ("accelerate",)


def get_dataloaders(batch_size=8):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(96, 16, generator=generator)
    y = (x[:, 0] > 0).long()
    train = DataLoader(TensorDataset(x[:64], y[:64]), shuffle=True, batch_size=batch_size)
    evaluation = DataLoader(TensorDataset(x[64:], y[64:]), shuffle=False, batch_size=batch_size)
    return train, evaluation


def training_function(config):
    accelerator = Accelerator(cpu=True)
    set_seed(config["seed"])
    train_dataloader, eval_dataloader = get_dataloaders(config["batch_size"])
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    model, optimizer, train_dataloader, eval_dataloader = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader
    )
    for epoch in range(config["num_epochs"]):
        model.train()
        for inputs, labels in train_dataloader:
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        correct = total = 0
        for inputs, labels in eval_dataloader:
            with torch.no_grad():
                predictions = model(inputs).argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, labels))
            correct += int((predictions == references).sum())
            total += len(references)
        accelerator.print(f"epoch {epoch}: accuracy {correct / total:.3f}")
    accelerator.end_training()
    return correct / total


def worker():
    return training_function({"lr": 1e-2, "num_epochs": 2, "seed": 42, "batch_size": 8})


if __name__ == "__main__":
    worker()
