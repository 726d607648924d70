"""Manual data-parallel gradient averaging that skips parameters whose ``.grad`` is None.

Models the ``average_gradients`` helper of the PyTorch "Writing Distributed Applications" tutorial
(pytorch/tutorials ``intermediate_source/dist_tuto.rst``: one ``all_reduce`` per parameter, then divide by the
world size) as users patch it for models with data-dependent branches: pytorch/pytorch issue #47167
(``param.grad`` is None for an unused sub-module), the ``if p.grad is None: continue`` of KellerJordan/Muon
issue #37 ("Multi-GPU training hangs when skipping parameters with p.grad is None"), and DeepSpeed PR #291
(``buffered_allreduce_fallback`` ignored None grads, "this imbalance ... would cause hanging").

A tiny mixture-of-experts layer routes each sample to one of two experts by the sign of its first feature.
On rank 1 the second step's batch has no sample for expert 1, so after ``zero_grad(set_to_none=True)`` that
expert's weight and bias have no gradient. The helper skips them: rank 1 makes two all-reduces fewer than
rank 0 in that step. The two experts have the same shapes, so the later all-reduces pair up silently with the
wrong tensors; at the end rank 0 is left in two all-reduces that rank 1 never makes.

BUG: the ``continue`` on ``param.grad is None`` makes the number of all-reduces depend on each rank's data.
"""


import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class TinyMoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.experts = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        h = torch.relu(self.proj(x))
        route = (x[:, 0] > 0).long()  # expert 1 for samples whose first feature is positive
        out = torch.zeros_like(h)
        for index, expert in enumerate(self.experts):
            chosen = route == index
            if chosen.any():
                out[chosen] = expert(h[chosen])
        return out


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        if param.grad is None:
            continue  # BUG
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)  # WAITS
        param.grad.data /= size


def make_batch(rank, step):
    generator = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(6, 4, generator=generator)
    x[0, 0], x[1, 0] = x[0, 0].abs() + 0.1, -x[1, 0].abs() - 0.1  # both experts used ...
    if rank == 1 and step == 1:
        x[:, 0] = -x[:, 0].abs() - 0.1  # ... except here: nothing for expert 1
    return x


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyMoE()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(4):
        optimizer.zero_grad(set_to_none=True)
        x = make_batch(rank, step)
        loss = (model(x) - 1.0).pow(2).mean()
        loss.backward()
        average_gradients(model)  # WAITS
        optimizer.step()
    if rank == 0:
        print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
