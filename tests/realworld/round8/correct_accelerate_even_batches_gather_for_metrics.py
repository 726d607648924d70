"""Modelled on accelerate's default ``even_batches=True`` (huggingface/accelerate PR #776 / PR #781: samples from
the start of the dataset are repeated so that every process gets the same number of batches) together with
``gather_for_metrics``, which drops those repeated samples from the last gathered batch (accelerate's
``examples/nlp_example.py`` evaluation loop; the duplicates are what issue #684 and issue #1674 were about).

Looks suspicious, is right: 5 samples, batch size 2, 2 processes — a dataset that does not divide evenly, a
collective per batch, and a last batch that is shorter in the dataset than on the processes. With even batches
every process runs the loop the same number of times, and the metric counts exactly the 5 real samples.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)


def evaluate(accelerator, model, eval_dataloader):
    model.eval()
    correct, seen = 0, 0
    for batch in eval_dataloader:
        x, y = batch
        with torch.no_grad():
            predictions = model(x).argmax(dim=-1)
        predictions, references = accelerator.gather_for_metrics((predictions, y))
        correct += (predictions == references).sum().item()
        seen += references.numel()
    return correct, seen


def worker():
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    accelerator = Accelerator(cpu=True)  # even_batches=True is the default
    set_seed(0)
    model = torch.nn.Linear(6, 3)
    g = torch.Generator().manual_seed(0)
    dataset = TensorDataset(torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g))
    eval_dataloader = DataLoader(dataset, batch_size=2, shuffle=False)
    model, eval_dataloader = accelerator.prepare(model, eval_dataloader)
    correct, seen = evaluate(accelerator, model, eval_dataloader)
    accelerator.wait_for_everyone()
    assert seen == len(dataset), seen
    accelerator.print(f"accuracy {correct}/{seen}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
