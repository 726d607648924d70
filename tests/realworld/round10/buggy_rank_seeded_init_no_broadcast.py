"""Data-parallel training with hand-written gradient averaging, the model built after a per-rank seed.

Modelled on the ``random_seed(seed=42, rank=0)`` helper of mlfoundations/open_clip (``src/training/main.py``:
``torch.manual_seed(seed + rank)``; open_clip calls it with rank 0 before ``create_model_and_transforms`` and
with the real rank only afterwards, for the data pipeline), on the gradient averaging of the PyTorch
distributed tutorial (pytorch/tutorials ``dist_tuto.rst``: ``average_gradients`` all-reduces each ``.grad``
and divides; the tutorial seeds every rank with the same ``torch.manual_seed(1234)``), on Horovod's rule that
such training must start with ``hvd.broadcast_parameters(model.state_dict(), root_rank=0)``, and on
Megatron-LM's ``check_param_hashes_across_dp_replicas`` (``megatron/training/utils.py``; all-gathers a SHA
hash of every parameter; the training loop asserts "Parameter hashes not matching across DP replicas" every
``--check-weight-hash-across-dp-replicas-interval`` iterations).

Bug: the per-rank seed comes before the model is built and nothing broadcasts the initial weights, so the
replicas start different; averaging the gradients keeps them exactly as far apart as they started. No rank
waits: the periodic hash check all-gathers the hashes, every rank sees the mismatch and raises.
"""

import hashlib
import random
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

SEED = 42
STEPS = 6
CHECK_EVERY = 3


def random_seed(seed=42, rank=0):
    torch.manual_seed(seed + rank)
    random.seed(seed + rank)


def build_model():
    return torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.Tanh(), torch.nn.Linear(12, 1))


def average_gradients(model):
    world = float(dist.get_world_size())
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world


def check_param_hashes_across_replicas(model):
    digests = [hashlib.sha1(p.detach().numpy().tobytes()).digest() for p in model.parameters()]
    local = torch.tensor([list(d) for d in digests], dtype=torch.uint8)
    gathered = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, local)
    return all(torch.equal(g, gathered[0]) for g in gathered)


def worker():
    rank = dist.get_rank()
    random_seed(SEED, rank)
    model = build_model()  # BUG
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(STEPS, 8, 5)
    y = x.sum(-1, keepdim=True).tanh()
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[step - 1]), y[step - 1])
        loss.backward()
        average_gradients(model)
        opt.step()
        if step % CHECK_EVERY == 0:
            assert check_param_hashes_across_replicas(model), "Parameter hashes not matching across DP replicas"
    if rank == 0:
        print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
