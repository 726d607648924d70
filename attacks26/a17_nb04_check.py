"""Notebook 04's check: wrong answers (right APIs in the wrong order / on the wrong ranks) must get ✗ with a reason;
right answers written differently from the model answer must get ✓."""

import sys

import _h
import torch
import torch.distributed as dist

from barrierlab.exercises import nb04
from barrierlab.scenarios.find_the_bug import evaluate, local_loss, train_step


def _model(steps):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    for step in range(1, steps + 1):
        train_step(model, rank, step)
    return model, rank


# (a) wrong
def w_reduce_to_rank1(steps=4):
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)])
    dist.reduce(t, dst=1)
    return t.item() / dist.get_world_size() if rank == 0 else None


def w_reduce_before_loss(steps=4):
    model, rank = _model(steps)
    t = torch.zeros(1)
    dist.all_reduce(t)
    t += local_loss(model, rank)
    return t.item() / dist.get_world_size() if rank == 0 else None


def w_async_read_before_wait(steps=4):
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(t, async_op=True)
    value = t.item() / dist.get_world_size()
    work.wait()
    return value if rank == 0 else None


def w_only_others_evaluate(steps=4):
    model, rank = _model(steps)
    if rank != 0:
        evaluate(model, rank)
        return None
    return local_loss(model, rank)


# (b) right, written differently
def r_evaluate_everywhere(steps=4):
    model, rank = _model(steps)
    val = evaluate(model, rank)
    return val if rank == 0 else None


def r_reduce_to_0(steps=4):
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)])
    dist.reduce(t, dst=0)
    return t.item() / dist.get_world_size() if rank == 0 else None


def r_all_gather_object(steps=4):
    model, rank = _model(steps)
    losses = [None] * dist.get_world_size()
    dist.all_gather_object(losses, local_loss(model, rank))
    return sum(losses) / len(losses) if rank == 0 else None


def r_gather(steps=4):
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)])
    out = [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None
    dist.gather(t, out, dst=0)
    return float(sum(x.item() for x in out)) / len(out) if rank == 0 else None


def r_store_keys(steps=4):
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    model, rank = _model(steps)
    store.set(f"loss/{rank}", repr(local_loss(model, rank)))
    if rank != 0:
        return None
    keys = [f"loss/{r}" for r in range(dist.get_world_size())]
    store.wait(keys)
    return sum(float(store.get(k)) for k in keys) / len(keys)


def r_send_recv(steps=4):
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)], dtype=torch.float64)
    if rank != 0:
        dist.send(t, dst=0)
        return None
    total = t.item()
    for src in range(1, dist.get_world_size()):
        got = torch.zeros(1, dtype=torch.float64)
        dist.recv(got, src=src)
        total += got.item()
    return total / dist.get_world_size()


def r_async_waited_subgroup(steps=4):
    g = dist.new_group(list(range(dist.get_world_size())))
    model, rank = _model(steps)
    t = torch.tensor([local_loss(model, rank)])
    dist.all_reduce(t, group=g, async_op=True).wait()
    return t.item() / dist.get_world_size() if rank == 0 else None


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_reduce_to_rank1,
            w_reduce_before_loss,
            w_async_read_before_wait,
            w_only_others_evaluate,
            r_evaluate_everywhere,
            r_reduce_to_0,
            r_all_gather_object,
            r_gather,
            r_store_keys,
            r_send_recv,
            r_async_waited_subgroup,
        ]
    ]
    sys.exit(_h.check_cases(nb04.check, cases))
