# Validation with Accelerate's `even_batches=False` (the option of huggingface/accelerate PR #781, exercised by
# accelerate's test_utils/scripts/test_distributed_data_loop.py `test_can_disable_even_batches`: 3 samples on
# 2 processes give one process 2 batches and the other 1) and a per-batch `accelerator.reduce` of the loss: the
# process with the extra batch waits in its last reduce for a process that has left the loop. Written here.
# expect: 15 rank-dependent-loop accelerator.reduce
import torch
from accelerate import Accelerator


def run_validation(accelerator, model, loader):
    total = torch.zeros(1)
    for step, (x, y) in enumerate(loader):
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(model(x), y)
        total += accelerator.reduce(loss, reduction="mean")
    return total


def validate(accelerator, model, loader):
    model.eval()
    return run_validation(accelerator, model, loader)


def main(dataset):
    accelerator = Accelerator(even_batches=False)
    model = torch.nn.Linear(4, 1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=2)
    model, loader = accelerator.prepare(model, loader)
    print(validate(accelerator, model, loader))
