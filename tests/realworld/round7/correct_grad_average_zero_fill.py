"""Manual data-parallel gradient averaging that gives an unused parameter a zero gradient before reducing.

The fix for the hang of KellerJordan/Muon issue #37 and DeepSpeed PR #291 ("we pad all None gradients with zero
tensors"), in the shape of the review note on ByteDance-Seed/VeOmni PR #1090 (``veomni/distributed/
clip_grad_norm.py``: key the set of collectives on ``requires_grad``, not on ``grad is not None``; "a zero grad is
what an unused parameter contributed"); the helper is the ``average_gradients`` of the PyTorch distributed
tutorial (pytorch/tutorials ``intermediate_source/dist_tuto.rst``).

The same tiny mixture-of-experts layer as the buggy item: on rank 1 the second step has no sample for expert
1. The helper still skips parameters with ``requires_grad=False`` (a frozen embedding here) with a
``continue`` before the collective - that set is the same on every rank - and fills a missing gradient with
zeros, so every rank makes the same all-reduces in the same order.
"""


import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class TinyMoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 4)
        self.embed.requires_grad_(False)  # frozen: the same on every rank
        self.proj = nn.Linear(4, 4)
        self.experts = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        h = torch.relu(self.proj(self.embed(x)))
        route = (x[:, 0] > 0).long()
        out = torch.zeros_like(h)
        for index, expert in enumerate(self.experts):
            chosen = route == index
            if chosen.any():
                out[chosen] = expert(h[chosen])
        return out


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        if not param.requires_grad:
            continue
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
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
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    for step in range(4):
        optimizer.zero_grad(set_to_none=True)
        x = make_batch(rank, step)
        loss = (model(x) - 1.0).pow(2).mean()
        loss.backward()
        average_gradients(model)
        optimizer.step()
    # the replicas must still be identical
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    copies = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, flat)
    assert all(torch.equal(copies[0], c) for c in copies), "replicas diverged"
    if rank == 0:
        print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
