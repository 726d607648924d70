"""Pipeline + data parallel training where the last stage averages the loss over its data-parallel group
and only the global last rank prints it.

Megatron-LM's arrangement: ``average_losses_across_data_parallel_group`` (``megatron/training/utils.py``, one
``all_reduce`` over ``mpu.get_data_parallel_group()``) called on every rank of the last pipeline stage
(``pretrain_gpt.py`` ``loss_func``; ``megatron/core/pipeline_parallel/schedules.py`` computes the loss only
``if parallel_state.is_pipeline_last_stage()``), and printing on ``is_last_rank()`` (``print_rank_last``). The
layout follows ``megatron/core/parallel_state.py`` ``initialize_model_parallel``: 4 ranks, 2 pipeline stages,
data-parallel groups [0, 1] and [2, 3], pipeline groups [0, 2] and [1, 3].

Looks suspicious, is right: the loss all-reduce sits under ``if is_pipeline_last_stage():``, which is true on
exactly the members of the group it reduces over (ranks 2 and 3); the first stage's group [0, 1] makes no such
call, and the print under ``is_last_rank()`` has no collective inside. Every rank creates every group, in the
same order.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

PIPELINE_SIZE = 2
TRAIN_ITERS = 3

_DATA_PARALLEL_GROUP = None
_PIPELINE_RANKS = None


def initialize_model_parallel(pipeline_model_parallel_size):
    global _DATA_PARALLEL_GROUP, _PIPELINE_RANKS
    world_size, rank = dist.get_world_size(), dist.get_rank()
    data_parallel_size = world_size // pipeline_model_parallel_size
    for stage in range(pipeline_model_parallel_size):  # every rank creates every group
        ranks = list(range(stage * data_parallel_size, (stage + 1) * data_parallel_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            _DATA_PARALLEL_GROUP = group
    for first in range(data_parallel_size):
        ranks = list(range(first, world_size, data_parallel_size))
        dist.new_group(ranks)
        if rank in ranks:
            _PIPELINE_RANKS = ranks


def get_data_parallel_group():
    return _DATA_PARALLEL_GROUP


def pipeline_stage():
    return _PIPELINE_RANKS.index(dist.get_rank())


def is_pipeline_first_stage():
    return pipeline_stage() == 0


def is_pipeline_last_stage():
    return pipeline_stage() == len(_PIPELINE_RANKS) - 1


def is_last_rank():
    return dist.get_rank() == dist.get_world_size() - 1


def average_losses_across_data_parallel_group(losses):
    averaged = torch.cat([loss.clone().detach().view(1) for loss in losses])
    dist.all_reduce(averaged, group=get_data_parallel_group())
    return averaged / dist.get_world_size(group=get_data_parallel_group())


def allreduce_gradients(module):
    grads = [p.grad for p in module.parameters()]
    flat = torch.cat([g.flatten() for g in grads])
    dist.all_reduce(flat, group=get_data_parallel_group())
    flat /= dist.get_world_size(group=get_data_parallel_group())
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def forward_backward_step(module, batch):
    """One micro-batch through a 2-stage pipeline: activations forward, their gradient back (p2p)."""
    x, y = batch
    stage = pipeline_stage()
    if is_pipeline_first_stage():
        hidden = module(x)
        dist.send(hidden.detach(), dst=_PIPELINE_RANKS[stage + 1])
        grad = torch.empty_like(hidden)
        dist.recv(grad, src=_PIPELINE_RANKS[stage + 1])
        hidden.backward(grad)
        return None
    hidden = torch.empty(x.shape[0], 4)
    dist.recv(hidden, src=_PIPELINE_RANKS[stage - 1])
    hidden.requires_grad_()
    loss = nn.functional.mse_loss(module(hidden), y)
    loss.backward()
    dist.send(hidden.grad, dst=_PIPELINE_RANKS[stage - 1])
    return loss


def train(module, optimizer):
    data_parallel_rank = dist.get_rank(group=get_data_parallel_group())
    generator = torch.Generator().manual_seed(data_parallel_rank)
    for iteration in range(1, TRAIN_ITERS + 1):
        batch = (torch.randn(8, 4, generator=generator), torch.randn(8, 4, generator=generator))
        optimizer.zero_grad()
        loss = forward_backward_step(module, batch)
        allreduce_gradients(module)
        optimizer.step()
        if is_pipeline_last_stage():
            reported = average_losses_across_data_parallel_group([loss])
            if is_last_rank():
                print(f"iteration {iteration} lm loss {reported.item():.4f}")


def worker():
    initialize_model_parallel(PIPELINE_SIZE)
    torch.manual_seed(pipeline_stage())  # the same stage weights on every data-parallel rank
    module = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    train(module, optimizer)
    dist.barrier()


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
