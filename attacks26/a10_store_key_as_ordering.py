"""A c10d store key used as the ordering instead of a barrier.
good1: rank 0 writes the file, store.set('ready'); others store.wait(['ready']) and read -> no race.
good2: each rank writes its part, then torch.distributed.elastic.utils.store.barrier(store, world, prefix); rank 0
reads every part -> no race.  good3: a counting barrier: store.add('n', 1), then poll store.add('n', 0) until it is
world -> no race.  bad: rank 0 sets the key before it writes the file -> race."""

import sys

import _h


def good1(d):
    import os
    import time

    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    p = os.path.join(d, "vocab.txt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        open(p, "w").write("a b c")
        store.set("ready", "1")
        v = "wrote"
    else:
        store.wait(["ready"])
        v = open(p).read()
    dist.barrier()
    return v


def good2(d):
    import os

    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _get_default_store
    from torch.distributed.elastic.utils.store import barrier as store_barrier

    r, w = dist.get_rank(), dist.get_world_size()
    open(os.path.join(d, f"part{r}"), "w").write(str(r) * 10)
    store_barrier(_get_default_store(), w, key_prefix="parts", barrier_timeout=5)
    v = sorted(len(open(os.path.join(d, f"part{i}")).read()) for i in range(w)) if r == 0 else None
    dist.barrier()
    return v


def good3(d):
    import os
    import time

    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    r, w = dist.get_rank(), dist.get_world_size()
    time.sleep(0.1 * r)
    open(os.path.join(d, f"part{r}"), "w").write(str(r) * 10)
    store.add("n", 1)
    while store.add("n", 0) < w:
        time.sleep(0.002)
    v = sorted(len(open(os.path.join(d, f"part{i}")).read()) for i in range(w)) if r == 0 else None
    dist.barrier()
    return v


def bad(d):
    import os
    import time

    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    p = os.path.join(d, "vocab.txt")
    if dist.get_rank() == 0:
        store.set("ready", "1")
        time.sleep(0.3)
        open(p, "w").write("a b c")
        v = "wrote"
    else:
        store.wait(["ready"])
        try:
            v = open(p).read()
        except FileNotFoundError:
            v = "missing"
    dist.barrier()
    return v


sys.exit(
    _h.judge(
        [
            ("set-then-wait", good1, False, {}),
            ("elastic-store-barrier", good2, False, {}),
            ("add-counter-polled", good3, False, {}),
            ("set-before-write", bad, True, {}),
        ]
    )
)
