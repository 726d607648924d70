# `even_batches=False` used for what it is meant for: no sample is duplicated, each process predicts its own
# batches with no collective in the loop, and the predictions are gathered once, after the loop, as Python
# objects (whose lengths may differ per process). Modelled on accelerate's
# test_utils/scripts/test_distributed_data_loop.py (`test_can_disable_even_batches`) and the `gather_object`
# use of accelerate's examples, written here.
# expect: none
import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, gather_object


def predict(model, loader):
    predictions = []
    for x, _ in loader:
        predictions.extend(model(x).argmax(dim=-1).tolist())
    return predictions


def main(dataset):
    accelerator = Accelerator(dataloader_config=DataLoaderConfiguration(even_batches=False))
    model = torch.nn.Linear(4, 3)
    loader = torch.utils.data.DataLoader(dataset, batch_size=2)
    loader = accelerator.prepare(loader)
    with torch.no_grad():
        mine = predict(model, loader)
    everything = gather_object(mine)
    accelerator.print(len(everything))
