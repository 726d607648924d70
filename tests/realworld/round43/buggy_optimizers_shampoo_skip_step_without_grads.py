"""Distributed Shampoo (facebookresearch/optimizers): a rank whose own blocks received no gradient skips the step, and
with it the all-gather that hands every rank the updated parameters.

Source: facebookresearch/optimizers PR #149, "Fix the bug skipping step if no gradients" (April 2025, reported by
wz337): "this bug skips the `Distributor.update_params()` for ranks without gradients ... DDP/HSDP1/HSDP2 Shampoos
might hang indefinitely at `torch.distributed.all_gather_into_tensor()` due to ranks without gradients won't join."
Modelled on `distributed_shampoo/distributed_shampoo.py` `DistributedShampoo.step` (the
`if not state_lists[MASKED_BLOCKED_GRADS]: continue` that the PR removed) and
`distributed_shampoo/utils/shampoo_ddp_distributor.py` `DDPDistributor` (blocks assigned to ranks by buffer size,
`update_params` -> `_all_gather_into_tensor`).

What it does: three data-parallel ranks train a small two-headed model. Gradients are all-reduced, then the DDP
distributor gives every parameter block to one rank (largest block first, to the least-loaded rank); each rank
computes the search direction of its own blocks, writes its updated blocks into its slice of a communication buffer
and all-gathers the buffer, so every rank ends the step with every block updated. The auxiliary head is only trained
in the distillation phase; in this phase it receives no gradient, on any rank.

The bug: rank 1 owns only the auxiliary head's weight, so its list of local gradients is empty and `step` returns
before `update_params`. Ranks 0 and 2 wait in `all_gather_into_tensor` for rank 1's slice.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15


class DDPDistributor:
    """Every block is owned by one rank; an update is local, then all-gathered into every rank's copy."""

    def __init__(self, named_params, rank, world_size):
        self.names = [name for name, _ in named_params]
        self.params = [p for _, p in named_params]
        load = [0] * world_size
        self.owner = [0] * len(self.params)
        for i in sorted(range(len(self.params)), key=lambda i: -self.params[i].numel()):
            target = min(range(world_size), key=lambda r: (load[r], r))
            self.owner[i] = target
            load[target] += self.params[i].numel()
        self.rank, self.world_size = rank, world_size
        self.chunk = max(load)
        self.local = [i for i in range(len(self.params)) if self.owner[i] == rank]
        self.offsets = {}
        for r in range(world_size):
            offset = 0
            for i in range(len(self.params)):
                if self.owner[i] == r:
                    self.offsets[i] = offset
                    offset += self.params[i].numel()

    def local_names(self):
        return [self.names[i] for i in self.local]

    def masked_local_grads(self):
        return [(i, self.params[i].grad) for i in self.local if self.params[i].grad is not None]

    @torch.no_grad()
    def update_params(self, directions):
        for i, direction in directions:
            self.params[i].add_(direction)
        send = torch.zeros(self.chunk)
        for i in self.local:
            send[self.offsets[i]:self.offsets[i] + self.params[i].numel()] = self.params[i].reshape(-1)
        gathered = torch.zeros(self.chunk * self.world_size)
        dist.all_gather_into_tensor(gathered, send)  # WAITS
        for i, p in enumerate(self.params):
            start = self.owner[i] * self.chunk + self.offsets[i]
            p.copy_(gathered[start:start + p.numel()].view_as(p))


class DistributedShampoo:
    def __init__(self, model, lr, rank, world_size):
        self.lr = lr
        self.distributor = DDPDistributor(list(model.named_parameters()), rank, world_size)
        self.steps = 0

    @torch.no_grad()
    def step(self):
        masked_blocked_grads = self.distributor.masked_local_grads()
        if not masked_blocked_grads:  # BUG
            return
        self.steps += 1
        # stand-in for the Kronecker-factor root inverses: a grafted, norm-preserving direction per block
        directions = [(i, -self.lr * g / (g.norm() + 1e-8)) for i, g in masked_blocked_grads]
        self.distributor.update_params(directions)  # WAITS


class TwoHeadModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 8)
        self.aux_head = nn.Linear(8, 3, bias=False)
        self.head = nn.Linear(8, 1)

    def forward(self, x, distill=False):
        h = torch.tanh(self.trunk(x))
        out = self.head(h).squeeze(-1)
        return (out, self.aux_head(h)) if distill else (out, None)


def allreduce_grads(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world_size)


def train(model, optimizer, rank, world_size, steps=3):
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(steps, 4, 8, generator=generator)
    y = torch.randn(steps, 4, generator=generator)
    for step in range(steps):
        model.zero_grad(set_to_none=True)
        out, _ = model(x[step])
        loss = nn.functional.mse_loss(out, y[step])
        loss.backward()
        allreduce_grads(model, world_size)
        optimizer.step()  # WAITS
        report = torch.tensor([loss.item()])
        dist.all_reduce(report)  # WAITS
        if rank == 0:
            print(f"step {step}: mean loss {report.item() / world_size:.4f}", flush=True)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = TwoHeadModel()
    optimizer = DistributedShampoo(model, lr=0.05, rank=rank, world_size=world_size)
    print(f"[rank {rank}] owns {optimizer.distributor.local_names()}", flush=True)
    train(model, optimizer, rank, world_size)  # WAITS
    checksum = torch.tensor([sum(p.sum().item() for p in model.parameters())])
    dist.all_reduce(checksum)
    print(f"[rank {rank}] done after {optimizer.steps} Shampoo steps, parameter checksum {checksum.item():.4f}",
          flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
