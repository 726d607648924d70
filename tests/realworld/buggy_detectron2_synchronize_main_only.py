"""detectron2-style training: after evaluation, only the main process calls ``comm.synchronize()``.

Source: facebookresearch/detectron2 detectron2/utils/comm.py (``synchronize`` is a ``dist.barrier()``) and
lufficc/SSD issue #100 ("Deadlock at synchronize when using multiple GPUs": training "hangs after the first
evaluation step ... it appears to be in the synchronize function at the barrier"), a detectron2-derived
``synchronize``; detectron2 issue #3886 shows the same stall after distributed evaluation.
Stand-in: tests/realworld/_standins/detectron2/utils/comm.py.
Bug: ``synchronize`` under ``is_main_process()`` (BUG) pairs with nothing; rank 0 waits in it (WAITS)
while rank 1 is in the next iteration's gradient all_reduce (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from detectron2.utils import comm

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def do_test(model):
    with torch.no_grad():
        return model.module(torch.randn(4, 2)).mean().item()


def do_train(model, max_iter=4, eval_period=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    results = None
    for iteration in range(max_iter):
        loss = model(torch.randn(4, 2)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if (iteration + 1) % eval_period == 0:
            results = do_test(model)
            if comm.is_main_process():
                print(f"iter {iteration}: {results:.3f}")
                comm.synchronize()  # BUG  # WAITS
    return results


def worker():
    model = DDP(torch.nn.Linear(2, 1))
    return do_train(model)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
