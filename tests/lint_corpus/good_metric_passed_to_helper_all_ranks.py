# The same helper called on every rank; only the print is rank 0's.
# Models the validate(val_loader, model, criterion, args) helper of pytorch/examples imagenet/main.py, with
# a torchmetrics metric passed in, written here.
# expect: none
import torch
import torch.distributed as dist
from torchmetrics.classification import MulticlassAccuracy


def validate(loader, model, accuracy):
    with torch.no_grad():
        for x, y in loader:
            accuracy.update(model(x), y)
    return accuracy.compute()


def main(loader, model):
    accuracy = MulticlassAccuracy(num_classes=10)
    value = validate(loader, model, accuracy)
    if dist.get_rank() == 0:
        print(value)
