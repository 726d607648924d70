"""Promise 4: no false race on correct code.

Rank 0 publishes a checkpoint whole (torch.save to a temp name, then os.replace); the other ranks wait for it
by polling the folder's listing (`while "m.pt" not in os.listdir(d)`), then load it. The same wait polled with
os.path.exists is ordered by the model (a file published by a rename and waited for). Through os.listdir every
poll is reported as a race with the temp file's creation, and the load as a race with the replace.
Exits 0 when the listdir program has no race, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def publish_exists(d):
    p = os.path.join(d, "m.pt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        torch.save({"a": 1}, p + ".tmp")
        os.replace(p + ".tmp", p)
        return 0
    while not os.path.exists(p):
        time.sleep(0.01)
    return torch.load(p)["a"]


def publish_listdir(d):
    p = os.path.join(d, "m.pt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        torch.save({"a": 1}, p + ".tmp")
        os.replace(p + ".tmp", p)
        return 0
    while "m.pt" not in os.listdir(d):
        time.sleep(0.01)
    return torch.load(p)["a"]


def main() -> int:
    results = {}
    for fn in (publish_exists, publish_listdir):
        d = tempfile.mkdtemp(prefix="a18_a02_")
        try:
            run = bl.run(fn, world_size=3, args=(d,), timeout=10)
            races = run.races()
            results[fn.__name__] = (run.ok, len(races), [str(r) for r in races[:2]])
        finally:
            shutil.rmtree(d, ignore_errors=True)
    for name, (ok, n, first) in results.items():
        print(f"{name}: finished={ok} races={n}")
        for line in first:
            print("   ", line)
    ok_e, n_e, _ = results["publish_exists"]
    ok_l, n_l, _ = results["publish_listdir"]
    if ok_l and n_l:
        print("BROKEN: a correct wait through os.listdir is reported as races")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
