"""Modelled on accelerate's ``even_batches`` option (huggingface/accelerate PR #776 "Allow BatchSamplerShard to not
even out batches", PR #781 "Add `even_batches` keyword to Accelerator": with ``even_batches=False`` "each process
will see a different number of batches"), on issue #684 (the request that led to it, to avoid duplicated
evaluation samples) and PR #820 (``join_uneven_inputs``, the context manager meant to go with it), and on the
per-batch ``gather_for_metrics`` evaluation loop of accelerate's ``examples/nlp_example.py``; the hang it gives
is the one Chris-hughes10/pytorch-accelerated PR #53 describes ("one or more processes ... have 0 samples on the
last batch ... that will freeze the run without any kind of reporting").

The bug: ``even_batches=False`` (in accelerate 1.x through ``DataLoaderConfiguration``) to avoid the duplicated samples, with the usual per-batch
``gather_for_metrics`` left in the loop. 5 samples, batch size 2, 2 processes: process 0 gets 2 batches, process 1
gets 1. Process 0's second gather waits for process 1, which has gone on to ``wait_for_everyone()``.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
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
        predictions, references = accelerator.gather_for_metrics((predictions, y))  # WAITS
        correct += (predictions == references).sum().item()
        seen += references.numel()
    return correct, seen


def worker():
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, set_seed

    accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(even_batches=False))  # BUG
    set_seed(0)
    model = torch.nn.Linear(6, 3)
    g = torch.Generator().manual_seed(0)
    dataset = TensorDataset(torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g))
    eval_dataloader = DataLoader(dataset, batch_size=2, shuffle=False)
    model, eval_dataloader = accelerator.prepare(model, eval_dataloader)
    correct, seen = evaluate(accelerator, model, eval_dataloader)  # WAITS
    accelerator.wait_for_everyone()  # WAITS
    accelerator.print(f"accuracy {correct}/{seen}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
