"""Notebook 07's check_results: wrong answers (right APIs in the wrong order / on the wrong ranks) must get ✗ with a
reason; right answers written differently from the model answer must get ✓."""

import os
import sys
import time

import _h
import torch
import torch.distributed as dist

from barrierlab.exercises import nb07
from barrierlab.scenarios import race_results_file

H = race_results_file.HEADER


def _phases(seed):
    rank = dist.get_rank()
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    return setup_s, evaluate_s


def _acc(rank):
    return round(0.9 + rank / 100, 2)


# (a) wrong
def w_set_key_before_append(workdir, seed=0):
    from torch.distributed.distributed_c10d import _get_default_store

    store, rank, world = _get_default_store(), dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    _, evaluate_s = _phases(seed)
    if rank == 0:
        with open(path, "w") as f:
            f.write(H + "\n")
        store.set("created", "1")
    else:
        store.wait(["created"])
    time.sleep(evaluate_s)
    store.set(f"appended/{rank}", "1")  # signalled before the append
    with open(path, "a") as f:
        f.write(f"{rank},{_acc(rank)}\n")
    if rank == 0:
        store.wait([f"appended/{r}" for r in range(world)])
        time.sleep(0.3)
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world} results"
    return _acc(rank)


def w_recv_only_from_rank1(workdir, seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    if rank == 1:
        dist.send(torch.tensor([_acc(rank)]), dst=0)
    if rank == 0:
        got = torch.zeros(1)
        dist.recv(got, src=1)
        with open(path, "w") as f:
            f.write(H + "\n")
            for r in range(world):
                f.write(f"{r},{_acc(r)}\n")  # the others' lines written for them
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world} results"
    return _acc(rank)


def w_all_gather(workdir, seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    out = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(out, torch.tensor([_acc(rank)]))
    if rank == 0:
        with open(path, "w") as f:
            f.write(H + "\n")
            for r, t in enumerate(out):
                f.write(f"{r},{round(t.item(), 2)}\n")
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world} results"
    return _acc(rank)


def w_gather_then_others_append(workdir, seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    dist.gather(torch.tensor([_acc(rank)]), [torch.zeros(1) for _ in range(world)] if rank == 0 else None, dst=0)
    if rank != 0:
        with open(path, "a") as f:  # still appending themselves, after the gather
            f.write(f"{rank},{_acc(rank)}\n")
        return _acc(rank)
    with open(path, "w") as f:
        f.write(H + "\n")
        f.write(f"0,{_acc(0)}\n")
    time.sleep(0.3)
    with open(path) as f:
        rows = f.read().splitlines()[1:]
    return f"{len(rows)} of {world} results"


# (b) right, written differently
def _own_file(path, results):
    with open(path, "w") as f:
        f.write(H + "\n")
        for r, a in results:
            f.write(f"{r},{a}\n")
    with open(path) as f:
        return f.read().splitlines()[1:]


def r_gather(workdir, seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    bucket = [torch.zeros(1, dtype=torch.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.tensor([_acc(rank)], dtype=torch.float64), bucket, dst=0)
    if rank == 0:
        rows = _own_file(os.path.join(workdir, "results.csv"), [(r, round(t.item(), 2)) for r, t in enumerate(bucket)])
        return f"{len(rows)} of {world} results"
    return _acc(rank)


def r_irecv_all(workdir, seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    if rank != 0:
        dist.isend(torch.tensor([_acc(rank)], dtype=torch.float64), dst=0).wait()
        return _acc(rank)
    bufs = {r: torch.zeros(1, dtype=torch.float64) for r in range(1, world)}
    reqs = [dist.irecv(bufs[r], src=r) for r in bufs]
    for q in reqs:
        q.wait()
    rows = _own_file(
        os.path.join(workdir, "results.csv"), [(0, _acc(0))] + [(r, round(b.item(), 2)) for r, b in bufs.items()]
    )
    return f"{len(rows)} of {world} results"


def r_store_keys_shared_file(workdir, seed=0):
    from torch.distributed.distributed_c10d import _get_default_store

    store, rank, world = _get_default_store(), dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    _, evaluate_s = _phases(seed)
    if rank == 0:
        with open(path, "w") as f:
            f.write(H + "\n")
        store.set("created", "1")
    else:
        store.wait(["created"])
    time.sleep(evaluate_s)
    with open(path, "a") as f:
        f.write(f"{rank},{_acc(rank)}\n")
    store.set(f"appended/{rank}", "1")
    if rank == 0:
        store.wait([f"appended/{r}" for r in range(world)])
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world} results"
    return _acc(rank)


def r_store_values(workdir, seed=0):
    from torch.distributed.distributed_c10d import _get_default_store

    store, rank, world = _get_default_store(), dist.get_rank(), dist.get_world_size()
    _, evaluate_s = _phases(seed)
    time.sleep(evaluate_s)
    store.set(f"acc/{rank}", str(_acc(rank)))
    if rank != 0:
        return _acc(rank)
    results = [(r, store.get(f"acc/{r}").decode()) for r in range(world)]  # get blocks until each is set
    rows = _own_file(os.path.join(workdir, "results.csv"), results)
    return f"{len(rows)} of {world} results"


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_set_key_before_append,
            w_recv_only_from_rank1,
            w_all_gather,
            w_gather_then_others_append,
            r_gather,
            r_irecv_all,
            r_store_keys_shared_file,
            r_store_values,
        ]
    ]
    sys.exit(_h.check_cases(nb07.check_results, cases))
