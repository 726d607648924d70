"""Promise 4 (no false race on correct code): every rank writes its own file, then reports through the store;
rank 0 waits until every rank has reported, then reads every file.

- `store.append("done", str(rank))`, rank 0 polling `store.get("done")` until it holds every rank's digit;
- `store.queue_push("q", str(rank))`, rank 0 popping world_size items with `store.queue_pop("q")`.

Both are correct: rank 0 reads a file only after it has seen that rank's append (its byte is in the value) or
popped that rank's item. run.races() reports a race for a rank whose append/push was not the key's first:
the model orders a read of a key after the key's FIRST write only (ordering.Order._key_exists), which fits
set/wait but not append (a value that holds every append) or a queue (the k-th pop after the k-th push).
(store.add counters, check() of every key, wait + multi_get are modelled and give no race.)"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def report(folder, how):
    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.PrefixStore("mine/", dist.distributed_c10d._get_default_store())
    with open(os.path.join(folder, f"f{rank}.txt"), "w") as f:
        f.write("x")
    if how == "append":
        store.append("done", str(rank))
        if rank == 0:
            while len(store.get("done")) < world:  # every rank's digit is in the value
                time.sleep(0.01)
    else:
        store.queue_push("q", str(rank))
        if rank == 0:
            for _ in range(world):  # one item per rank
                store.queue_pop("q")
    if rank == 0:
        return [open(os.path.join(folder, f"f{k}.txt")).read() for k in range(world)]
    return None


def main():
    broken = []
    for how in ("append", "queue"):
        folder = tempfile.mkdtemp()
        try:
            run = bl.run(report, world_size=3, args=(folder, how), timeout=10, live=False)
            races = run.races()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if not run.ok:
            print(how, "did not finish:", run)
            return 1
        print(f"{how}: {len(races)} race(s)")
        if races:
            print("   ", str(races[0])[:220])
            broken.append(how)
    if broken:
        print("BROKEN: false races on correct code for", ", ".join(broken))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
