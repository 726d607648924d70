"""Megatron-LM ``load_checkpoint``: a rank whose own checkpoint shard fails to load prints through ``print_rank_0``
(nothing, on that rank) and calls ``sys.exit()``, while the other ranks go on to the barrier at the end of the load.

Models: NVIDIA/Megatron-LM PR #367 ("fix a bug on missing error message when loading checkpoints": "The errors on
non-zero ranks can cause a hang since the torch.distributed.barrier() is invoked and there is no any information on
terminal"). Code modelled (written here, not copied): ``megatron/checkpointing.py`` of 2023 -- ``get_checkpoint_name``
(``iter_XXXXXXX/mp_rank_XX/model_optim_rng.pt``, one file per tensor-parallel rank), ``read_metadata`` of
``latest_checkpointed_iteration.txt``, ``load_checkpoint`` (``torch.load`` in a ``try`` whose ``except`` does
``print_rank_0('could not load the checkpoint')``, ``print_rank_0(e)``, ``sys.exit()``; the state loaded into the
model and optimizer; ``torch.distributed.barrier()``; "successfully loaded checkpoint"), ``megatron/utils.py``
``print_rank_0``; a tensor-parallel MLP (column-parallel then row-parallel linear, the row-parallel output summed with
``reduce_from_tensor_model_parallel_region``) trained for a few iterations after the load. The damaged file is a
stand-in: rank 1's shard of the checkpoint was copied incompletely (truncated to half its size).

The bug: rank 1's ``torch.load`` raises; its error goes through ``print_rank_0`` (silent on rank 1) and
``sys.exit()`` ends rank 1 with exit status 0, while rank 0 waits in the barrier at the end of ``load_checkpoint``.
2 ranks (tensor-parallel size 2).
"""

import datetime
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 16
FFN = 32


def print_rank_0(message):
    if dist.get_rank() == 0:
        print(message, flush=True)


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        output = input_.clone()
        dist.all_reduce(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class ParallelMLP(nn.Module):
    def __init__(self, tp_size):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(HIDDEN, FFN // tp_size)
        self.dense_4h_to_h = nn.Linear(FFN // tp_size, HIDDEN, bias=False)

    def forward(self, x):
        partial = self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))
        return _ReduceFromModelParallelRegion.apply(partial)


def get_checkpoint_name(checkpoints_path, iteration, tp_rank):
    return os.path.join(checkpoints_path, f"iter_{iteration:07d}", f"mp_rank_{tp_rank:02d}", "model_optim_rng.pt")


def get_checkpoint_tracker_filename(checkpoints_path):
    return os.path.join(checkpoints_path, "latest_checkpointed_iteration.txt")


def read_metadata(tracker_filename):
    with open(tracker_filename) as f:
        return int(f.read().strip())


def load_checkpoint(model, optimizer, load_dir):
    iteration = read_metadata(get_checkpoint_tracker_filename(load_dir))
    checkpoint_name = get_checkpoint_name(load_dir, iteration, dist.get_rank())
    print_rank_0(f" loading checkpoint from {load_dir} at iteration {iteration}")
    try:
        state_dict = torch.load(checkpoint_name)
    except BaseException as e:
        print_rank_0("could not load the checkpoint")
        print_rank_0(e)
        sys.exit()  # BUG
    model.load_state_dict(state_dict["model"])
    optimizer.load_state_dict(state_dict["optimizer"])
    dist.barrier()  # WAITS
    print_rank_0(f"  successfully loaded checkpoint from {load_dir} at iteration {iteration}")
    return iteration


def write_earlier_checkpoint(load_dir, iteration, tp_size):
    torch.manual_seed(1)
    for tp_rank in range(tp_size):
        model = ParallelMLP(tp_size)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        path = get_checkpoint_name(load_dir, iteration, tp_rank)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}, path)
    with open(get_checkpoint_tracker_filename(load_dir), "w") as f:
        f.write(str(iteration))
    damaged = get_checkpoint_name(load_dir, iteration, 1)
    with open(damaged, "rb") as f:
        data = f.read()
    with open(damaged, "wb") as f:
        f.write(data[: len(data) // 2])


def pretrain(load_dir, train_iters):
    rank, tp_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234 + rank)
    model = ParallelMLP(tp_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    iteration = load_checkpoint(model, optimizer, load_dir)  # WAITS
    gen = torch.Generator().manual_seed(5)
    while iteration < train_iters:
        x = torch.randn(8, HIDDEN, generator=gen)
        loss = F.mse_loss(model(x), x.flip(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        iteration += 1
        print_rank_0(f" iteration {iteration:4d} | lm loss: {loss.item():.4E}")
    return iteration


def worker():
    rank = dist.get_rank()
    load_dir = os.path.join(tempfile.gettempdir(), f"r34_megatron_{os.environ.get('MASTER_PORT', '0')}")
    if rank == 0:
        write_earlier_checkpoint(load_dir, iteration=3, tp_size=dist.get_world_size())
    dist.barrier()
    iteration = pretrain(load_dir, train_iters=6)  # WAITS
    print(f"[rank {rank}] done at iteration {iteration}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(load_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
