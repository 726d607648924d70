# Reproduction (shortened) of Lightning-AI/pytorch-lightning examples/fabric/image_classifier/train_fabric.py
# @ 7f0c3436cd: rank 0 downloads MNIST first (rank_zero_first), loaders set up by Fabric (DistributedSampler),
# DDP training with fabric.backward, a test loop whose loss is all_gathered, torchmetrics' Accuracy, and
# fabric.save on every rank. PLANTED BUG (lines marked # PLANTED): see the README.
import argparse

import torch
import torch.nn.functional as F
from lightning.fabric import Fabric, seed_everything
from torchmetrics.classification import Accuracy
from torchvision.datasets import MNIST

DATASETS_PATH = "data"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


def run(hparams):
    fabric = Fabric()
    seed_everything(hparams.seed)

    # Let rank 0 download the data first, then everyone will load MNIST
    with fabric.rank_zero_first(local=False):
        train_dataset = MNIST(DATASETS_PATH, download=fabric.is_global_zero, train=True)
        test_dataset = MNIST(DATASETS_PATH, download=fabric.is_global_zero, train=False)

    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=hparams.batch_size)
    test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=hparams.batch_size)
    train_loader, test_loader = fabric.setup_dataloaders(train_loader, test_loader)

    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=hparams.lr)
    model, optimizer = fabric.setup(model, optimizer)
    test_acc = Accuracy(task="multiclass", num_classes=10).to(fabric.device)

    for epoch in range(1, hparams.epochs + 1):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            fabric.backward(loss)
            optimizer.step()
            if (batch_idx == 0) or ((batch_idx + 1) % hparams.log_interval == 0):
                print(f"Train Epoch: {epoch} [{batch_idx * len(data)}]\tLoss: {loss.item():.6f}")
                if hparams.dry_run:
                    break

        model.eval()
        test_loss = 0
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                test_acc(output, target)
                if hparams.dry_run:
                    break

        # all_gather is used to aggregate the value across processes
        test_loss = fabric.all_gather(test_loss).sum() / len(test_loader.dataset)
        print(f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: ({100 * test_acc.compute():.0f}%)\n")
        test_acc.reset()
        if hparams.dry_run:
            break

    # When using distributed training, use `fabric.save`
    if hparams.save_model and fabric.is_global_zero:  # PLANTED
        fabric.save(path="mnist_cnn.pt", state=model.state_dict())  # PLANTED


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Fabric MNIST Example")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--dry-run", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--save-model", action="store_true", default=False)
    run(parser.parse_args())
