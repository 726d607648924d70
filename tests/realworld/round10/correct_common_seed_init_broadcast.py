"""Data-parallel training with hand-written gradient averaging, the model built from a common seed and its
weights broadcast from rank 0 before the per-rank seed takes over.

Modelled on mlfoundations/open_clip ``src/training/main.py`` (``random_seed(args.seed, 0)`` before
``create_model_and_transforms``, ``random_seed(args.seed, args.rank)`` after it), on the gradient averaging of
the PyTorch distributed tutorial (pytorch/tutorials ``dist_tuto.rst``, ``average_gradients``), on Horovod's
``hvd.broadcast_parameters(model.state_dict(), root_rank=0)`` at the start of training, and on Megatron-LM's
``check_param_hashes_across_dp_replicas`` (``megatron/training/utils.py``), run every few steps.

Correct, though it looks suspicious: every rank reseeds with its own rank and draws different data, the
gradients are averaged by hand with one all-reduce per parameter (no DDP), and the broadcast of the initial
weights is redundant-looking (the common seed already made them equal); the replicas stay identical and the
hash check passes on every rank.
"""

import hashlib
import random
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
    random_seed(SEED, 0)
    model = build_model()
    random_seed(SEED, rank)  # per-rank randomness from here on (dropout, augmentation, data order)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)  # as hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(STEPS, 8, 5)  # a different shard per rank
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
