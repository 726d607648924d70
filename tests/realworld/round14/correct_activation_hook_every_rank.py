"""Activation-statistics forward hooks that all-reduce, registered on every rank; only rank 0 prints.

Models: mosaicml/diffusion ``diffusion/callbacks/log_activation_statistics.py`` (``LogActivationStatistics``:
``register_forward_hook`` on the attention/linear layers at ``eval_start``, running means per layer, one
``log_metrics`` call at ``eval_end``, hooks removed), extended to log the global mean: the hook all-reduces each
batch's statistic; the pytorch/examples ImageNet ``validate()`` (loss sum and count all-reduced after the loop).

What it does: DDP training of a small MLP for two epochs; after each epoch an ``ActivationMonitor`` hooks the two
hidden ``Linear`` layers on every rank (a callback runs on every process; only the logging is rank 0's), the
validation loop runs 3 batches through the unwrapped module (two one-element hook all-reduces per batch on each
rank), then the summed validation loss and sample count are all-reduced; rank 0 prints the loss and the per-layer
activation means. Every rank makes the same collectives in the same order.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class ActivationMonitor:
    def __init__(self):
        self.handles, self.means, self.batches = [], {}, 0

    def _hook(self, name):
        def hook(module, inputs, output):
            stat = output.detach().abs().mean().reshape(1)
            dist.all_reduce(stat)
            stat /= dist.get_world_size()
            self.means[name] = self.means.get(name, 0.0) + stat.item()
        return hook

    def register_hooks(self, model):
        for name, layer in model.named_modules():
            if isinstance(layer, torch.nn.Linear) and name != "head":
                self.handles.append(layer.register_forward_hook(self._hook(name)))

    def eval_end(self):
        for h in self.handles:
            h.remove()
        means = {k: v / max(self.batches, 1) for k, v in self.means.items()}
        self.handles, self.means, self.batches = [], {}, 0
        return means


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = torch.nn.Linear(6, 16), torch.nn.Linear(16, 16), torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def validate(module, batches, monitor):
    total = torch.zeros(2)
    with torch.no_grad():
        for x, y in batches:
            out = module(x)
            total += torch.tensor([torch.nn.functional.mse_loss(out, y, reduction="sum").item(), len(y)])
            monitor.batches += 1
    dist.all_reduce(total)
    return total[0].item() / total[1].item(), monitor.eval_end()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(MLP())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    train = [(torch.randn(8, 6, generator=g), torch.randn(8, 1, generator=g)) for _ in range(4)]
    val = [(torch.randn(8, 6, generator=g), torch.randn(8, 1, generator=g)) for _ in range(3)]
    monitor = ActivationMonitor()
    for epoch in range(2):
        model.train()
        for x, y in train:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        model.eval()
        monitor.register_hooks(model.module)
        loss, act = validate(model.module, val, monitor)
        if rank == 0:
            print(f"epoch {epoch}: val loss {loss:.4f}, activations {act}")
    dist.barrier()  # leave together: no rank tears its group down while a peer still talks to it


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
