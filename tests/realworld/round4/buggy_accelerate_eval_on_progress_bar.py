"""Real accelerate: evaluation triggered by a progress bar that only the main process updates.

Source: huggingface/transformers issue #31532 ("Process hangs when evaluating the model before finishing an
epoch using ``accelerate`` in a multi-GPU environment (no trainer)"); the reporter's own diagnosis: the
``tqdm`` bar was created with ``disable=not accelerator.is_main_process``, the mid-epoch evaluation was keyed
to the bar's count, "so this caused only the main process enter into the evaluate part, so the
``gather_for_metrics`` is waiting for the other process forever". Here: a tiny regression model, evaluation
every 2 steps with ``gather_for_metrics`` over a prepared eval loader.

The bug: a disabled ``tqdm`` does not count (``update`` returns early), so ``progress_bar.n`` is 0 on the other
processes forever and they take the other branch from the main process: the evaluation's ``gather`` on one
rank meets the training step's gradient all-reduce on the other.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("accelerate", "tqdm")
EVAL_STEPS = 2


def evaluate(accelerator, model, eval_loader):
    model.eval()
    losses = []
    for x, y in eval_loader:
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(model(x), y, reduction="none")
        losses.append(accelerator.gather_for_metrics(loss))  # WAITS
    model.train()
    return torch.cat(losses).mean().item()


def worker():
    from accelerate import Accelerator
    from tqdm.auto import tqdm

    import r4_common

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(r4_common.toy_dataset(16), batch_size=2)
    eval_loader = DataLoader(r4_common.toy_dataset(8, seed=1), batch_size=2)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
    progress_bar = tqdm(range(len(train_loader)), disable=not accelerator.is_main_process)
    eval_loss = None
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        progress_bar.update(1)
        if progress_bar.n > 0 and progress_bar.n % EVAL_STEPS == 0:  # BUG
            eval_loss = evaluate(accelerator, model, eval_loader)  # WAITS
    accelerator.wait_for_everyone()  # WAITS
    return eval_loss


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
