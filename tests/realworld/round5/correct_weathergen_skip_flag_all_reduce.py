"""DDP training that skips a batch with a non-finite or spiking loss on every rank at once: the per-rank
verdicts are combined with an all-reduce MAX before anyone decides.

Source: ecmwf/WeatherGenerator PR #2718 and issue #2724 ("Make loss-spike batch skip a global all-reduce
decision across ranks": every rank checks its own loss against its own history, the flags are combined with
an all-reduce MAX, i.e. a logical OR, "so an anomaly on any rank skips the batch on all ranks"; collective
calls stay symmetric on all code paths); the same recipe as NVIDIA-NeMo/Automodel PR #2468's min-reduced
``has_valid_anchor`` flag and the "skip_if_any" strategy of Lightning-AI/pytorch-lightning PR #5359. Here: a
tiny regressor wrapped in DDP, five batches per rank; rank 1's third batch holds a corrupt (NaN) sample and
rank 0's fourth batch a spike.

Correct: every rank reaches the flag all-reduce once per batch and takes the same branch, so the gradient
all-reduces of ``backward`` line up; both ranks skip batches 3 and 4 and end with equal weights.
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
SPIKE_FACTOR = 10.0


def batches(rank, generator):
    out = []
    for step in range(5):
        x = torch.randn(4, 3, generator=generator)
        y = x.sum(dim=1, keepdim=True)
        if (rank, step) == (1, 2):
            x[0, 0] = float("nan")  # a corrupt sample
        if (rank, step) == (0, 3):
            y = y * 100.0  # mislabelled targets: a loss spike
        out.append((x, y))
    return out


def is_anomalous(loss, history):
    if not math.isfinite(loss):
        return True
    return len(history) >= 2 and loss > SPIKE_FACTOR * (sum(history) / len(history))


def should_skip(loss, history):
    flag = torch.tensor([1.0 if is_anomalous(loss, history) else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def train(model, optimizer, data):
    history, skipped = [], []
    for step, (x, y) in enumerate(data):
        loss = F.mse_loss(model(x), y)
        if should_skip(loss.item(), history):
            skipped.append(step)
            continue
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return skipped


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    skipped = train(model, optimizer, batches(rank, torch.Generator().manual_seed(rank)))
    assert skipped == [2, 3], skipped
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = weights.clone()
    dist.broadcast(reference, src=0)
    assert torch.equal(weights, reference)
    return weights.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
