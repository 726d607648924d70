"""DDP training on uneven inputs under ``Join``, the loss log made a ``Joinable`` that shadows its all-reduce.

Modelled on the PyTorch tutorial "Distributed Training with Uneven Inputs Using the Join Context Manager"
(pytorch/tutorials ``advanced_source/generic_join.rst``: the toy ``Counter`` class made Joinable, its
``JoinHook.main_hook`` all-reducing a zero tensor for each iteration of the ranks still training, and
``Join.notify_join_context(self)`` called before its own collective) and on
``torch/distributed/algorithms/join.py`` (``Joinable``, ``JoinHook``; only the first Joinable's notification
makes the "still training" all-reduce). The DDP side is the tutorial's ``Join([model, ...])``.

Rank 0 has 5 batches, rank 1 has 3. The per-step loss log is a ``LossLog`` Joinable passed to ``Join`` after
the model: while rank 0 trains its last two batches, rank 1's join loop runs DDP's hook (the gradient bucket
all-reduce) and then ``LossLog``'s hook (a zero [loss sum, count] all-reduce), the same calls in the same order
as rank 0's iteration. What looks suspicious and is right: one rank leaves its training loop while the other
goes on making collectives, and the logged mean divides by a count that changes (joined ranks contribute 0).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join, Joinable, JoinHook
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

BATCHES_PER_RANK = {0: 5, 1: 3}


class LossLogJoinHook(JoinHook):
    def __init__(self, log):
        self.log = log

    def main_hook(self):
        # shadow the training ranks' [loss sum, count] all-reduce with zeros
        dist.all_reduce(torch.zeros(2))

    def post_hook(self, is_last_joiner):
        pass


class LossLog(Joinable):
    def __init__(self):
        super().__init__()
        self.history = []

    def __call__(self, loss):
        Join.notify_join_context(self)
        totals = torch.tensor([loss.item(), 1.0])
        dist.all_reduce(totals)
        self.history.append(totals[0].item() / totals[1].item())
        return self.history[-1], int(totals[1].item())

    def join_hook(self, **kwargs):
        return LossLogJoinHook(self)

    @property
    def join_device(self):
        return torch.device("cpu")

    @property
    def join_process_group(self):
        return dist.group.WORLD


def make_batches(rank):
    generator = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(4, 6, generator=generator), torch.randn(4, 1, generator=generator))
            for _ in range(BATCHES_PER_RANK[rank])]


def train(model, optimizer, batches, rank):
    log = LossLog()
    with Join([model, log]):
        for step, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            mean, ranks = log(loss.detach())
            if rank == 0:
                print(f"step {step}: mean loss {mean:.4f} over {ranks} rank(s)", flush=True)
    return log.history


def worker():
    torch.manual_seed(0)
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    history = train(model, optimizer, make_batches(rank), rank)
    print(f"rank {rank}: done after {len(history)} logged steps", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
