# A metric built in the training function and handed to an evaluation helper that only rank 0 calls: the
# helper's compute() gathers the states of every rank.
# Models the validate(val_loader, model, criterion, args) helper of pytorch/examples imagenet/main.py, with
# a torchmetrics metric passed in as the torchmetrics README's module-metric example uses one, written here.
# expect: 21 hidden-collective validate -> accuracy.compute
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
    if dist.get_rank() == 0:
        print(validate(loader, model, accuracy))
