# Per-rank sums converted with float()/int() before torch.tensor(...): each element has one Python type on
# every rank, so the inferred dtype is the same everywhere. Models the loss/accuracy reduction of pytorch/examples
# mnist_hogwild and the per-epoch metric reduction of torchvision's references (`float(...)` around an
# accumulated value before it is sent), written here.
# expect: none
import torch
import torch.distributed as dist


def reduce_epoch_metrics(loader, model):
    correct = 0
    loss_sum = 0
    for data, target in loader:
        output = model(data)
        loss_sum += torch.nn.functional.cross_entropy(output, target, reduction="sum").item()
        correct += (output.argmax(dim=1) == target).sum().item()
    totals = torch.tensor([float(loss_sum), float(correct), float(len(loader.dataset))])
    dist.all_reduce(totals)
    counts = torch.tensor([int(correct)])
    dist.all_reduce(counts)
    return (totals / totals[2]).tolist(), counts.item()
