"""Train a tiny classifier with DistributedDataParallel on gloo, as torchrun would run it.

    barrierlab run train.py -n 4 -- --workdir /tmp/job      # or: torchrun --nproc-per-node 4 train.py ...

The job: rank 0 prepares the dataset once; every rank trains on its shard (DistributedSampler), rank 0
saves a checkpoint after every epoch; at the end every rank reloads the last checkpoint, as a resumed job
would, and checks that it holds the weights it trained; rank 0 evaluates the model, exports it and removes
the checkpoint. It has two barrier bugs: notebooks/08_capstone.ipynb finds and fixes them.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--workdir", default="job", help="folder for the data, the checkpoint and the exported model")
parser.add_argument("--epochs", type=int, default=2)


def prepare_data(path):
    """Build the dataset (a stand-in for download and tokenization) and write it atomically."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 16, generator=generator)
    y = (x[:, :8].sum(dim=1) > x[:, 8:].sum(dim=1)).long()
    torch.save({"x": x, "y": y}, path + ".tmp")
    os.replace(path + ".tmp", path)


def save_checkpoint(model, optimizer, epoch, path):
    """Write the checkpoint atomically, then wait until every rank can see it."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)
    dist.barrier()


def evaluate(model, x, y):
    """Accuracy of ``model`` on (x, y), batch by batch."""
    correct = 0
    with torch.no_grad():
        for start in range(0, len(x), 64):
            correct += (model(x[start : start + 64]).argmax(dim=1) == y[start : start + 64]).sum().item()
    return correct / len(x)


def main():
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    os.makedirs(args.workdir, exist_ok=True)
    data_path = os.path.join(args.workdir, "data.pt")
    checkpoint = os.path.join(args.workdir, "checkpoint.pt")

    # 1. Data: rank 0 prepares it once; the others wait for it, then every rank loads it.
    if rank == 0:
        prepare_data(data_path)
    dist.barrier()
    data = torch.load(data_path, weights_only=True)
    train = TensorDataset(data["x"][:3072], data["y"][:3072])

    # 2. Model and data loader: DDP averages the gradients; the sampler gives each rank its shard.
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=64, sampler=sampler)

    # 3. Train, with a checkpoint after every epoch.
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            save_checkpoint(model.module, optimizer, epoch, checkpoint)

    # 4. Every rank reloads the last checkpoint, as a resumed job would, and checks it holds its weights.
    state = torch.load(checkpoint, weights_only=True)
    for name, weights in model.module.state_dict().items():
        assert torch.equal(state["model"][name], weights), f"rank {rank}: checkpoint's {name} differs"

    # 5. Rank 0 evaluates the model, exports it for serving and removes the training checkpoint.
    if rank == 0:
        accuracy = evaluate(model.module, data["x"][3072:], data["y"][3072:])
        torch.save(model.module.state_dict(), os.path.join(args.workdir, "model.pt"))
        os.remove(checkpoint)
        print(f"test accuracy {accuracy:.2f}")


if __name__ == "__main__":
    main()
