"""Accelerate's ``main_process_first``: the main process raises while preparing the data, so it never
reaches the barrier that would release the others.

Source: huggingface/accelerate src/accelerate/state.py ``PartialState._goes_first`` (non-main processes
``wait_for_everyone()`` on entry, the main process on exit, with no try/finally), used as
``with accelerator.main_process_first(): dataset = dataset.map(...)`` in accelerate's and transformers'
no_trainer examples; the failure mode is the one mosaicml/llm-foundry PR #749 fixed ("a barrier deadlock ...
if an Exception is raised" during rank-0 data preparation).
Stand-in: tests/realworld/_standins/accelerate.
Bug: the preprocessing raises on the main process only (BUG); the other processes wait in the
``main_process_first()`` entry barrier (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from accelerate import Accelerator

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def tokenize(examples, is_main):
    if is_main and any(len(e) > 10 for e in examples):
        raise ValueError("example longer than max_length while building the cache")  # BUG
    return [torch.tensor([len(e)]) for e in examples]


def worker():
    accelerator = Accelerator()
    raw = ["short", "a much longer example"]
    with accelerator.main_process_first():  # WAITS
        dataset = tokenize(raw, accelerator.is_main_process)
    model = accelerator.prepare(torch.nn.Linear(1, 1))
    for x in dataset:
        accelerator.backward(model(x.float()).sum())
    return len(dataset)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
