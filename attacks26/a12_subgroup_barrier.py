"""A barrier on a subgroup. good: g = new_group([0, 1]); rank 0 writes, both barrier on g, rank 1 reads -> no race
(ranks 2, 3 do not touch the file).  bad: ranks 2 and 3 also read after calling dist.barrier(group=g), which torch
returns from at once on a non-member -> race for ranks 2, 3 (only).  bad2: new_subgroups() of 2: rank 0 writes,
each rank barriers on its own subgroup, every rank reads -> ranks 2, 3 race (their subgroup lacks rank 0)."""

import sys

import _h


def good(d):
    import os
    import time

    import torch.distributed as dist

    g = dist.new_group([0, 1])
    p = os.path.join(d, "x.txt")
    r = dist.get_rank()
    if r == 0:
        time.sleep(0.2)
        open(p, "w").write("hello")
    v = None
    if r in (0, 1):
        dist.barrier(group=g)
        v = open(p).read()
    dist.barrier()
    return v


def bad(d):
    import os
    import time
    import warnings

    import torch.distributed as dist

    g = dist.new_group([0, 1])
    p = os.path.join(d, "x.txt")
    r = dist.get_rank()
    if r == 0:
        time.sleep(0.3)
        open(p, "w").write("hello")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.barrier(group=g)
    try:
        v = open(p).read()
    except FileNotFoundError:
        v = "missing"
    dist.barrier()
    return v


def bad2(d):
    import os
    import time

    import torch.distributed as dist

    sub, _ = dist.new_subgroups(2)
    p = os.path.join(d, "x.txt")
    r = dist.get_rank()
    if r == 0:
        time.sleep(0.3)
        open(p, "w").write("hello")
    dist.barrier(group=sub)
    try:
        v = open(p).read()
    except FileNotFoundError:
        v = "missing"
    dist.barrier()
    return v


def check_bad(races, readers):
    return {int(getattr(r.second, "rank", -1)) for r in races}


sys.exit(
    _h.judge(
        [
            ("member-barrier", good, False, {}),
            ("non-member-barrier", bad, True, {}),
            ("own-subgroup-barrier", bad2, True, {}),
        ]
    )
)
