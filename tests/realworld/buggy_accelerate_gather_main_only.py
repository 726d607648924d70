"""Accelerate: evaluation reached only by the main process; its ``gather_for_metrics`` waits for the others.

Source: huggingface/transformers issue #31532 ("Process hangs when evaluating the model before finishing an
epoch using `accelerate`"): the author found that evaluation was entered only by the main process (the
progress-bar condition ``disable=not accelerator.is_main_process`` gated the eval branch), "so the
`gather_for_metrics` is waiting for the other process forever".
Stand-in: tests/realworld/_standins/accelerate (gather is an all_gather).
Bug: evaluation under ``is_main_process`` (BUG); the main process waits in ``gather_for_metrics`` (WAITS),
the other in the next backward's gradient all_reduce (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from accelerate import Accelerator

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def evaluate(accelerator, model, batches):
    model.eval()
    correct = 0
    for x, y in batches:
        with torch.no_grad():
            predictions = model(x).argmax(-1)
        hits = accelerator.gather_for_metrics((predictions == y).long())  # WAITS
        correct += hits.sum().item()
    model.train()
    return correct


def worker():
    accelerator = Accelerator()
    model = accelerator.prepare(torch.nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    eval_batches = [(torch.randn(4, 4), torch.randint(0, 3, (4,)))]
    for step in range(4):
        loss = torch.nn.functional.cross_entropy(model(torch.randn(4, 4)), torch.randint(0, 3, (4,)))
        accelerator.backward(loss)  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        if step == 1 and accelerator.is_main_process:  # BUG
            accelerator.print(f"step {step}: {evaluate(accelerator, model, eval_batches)} correct")  # WAITS
    return step


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
