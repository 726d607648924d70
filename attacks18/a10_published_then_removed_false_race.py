"""Promise 4: no false race on correct code.

Rank 0 publishes m.pt whole (torch.save to m.pt.tmp, os.replace onto m.pt); the other ranks poll
os.path.exists(m.pt) and load it -- ordered, and the model says so. Add one line at the end: after a barrier
that every rank reaches once it has loaded the file, rank 0 removes m.pt (clean-up, as checkpoint rotation does
for old steps). The removal is ordered after every load, yet the loads are now reported as races with the
os.replace: a published path that is removed anywhere in the run no longer counts as published.
Exits 0 when the program with the clean-up has no race, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def publish_poll_load(d, cleanup):
    p = os.path.join(d, "m.pt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        torch.save({"a": 1}, p + ".tmp")
        os.replace(p + ".tmp", p)
        value = 0
    else:
        while not os.path.exists(p):  # wait for the published file
            time.sleep(0.01)
        value = torch.load(p)["a"]
    dist.barrier()  # every rank has loaded it
    if dist.get_rank() == 0 and cleanup:
        os.remove(p)
    return value


def main() -> int:
    found = {}
    for cleanup in (False, True):
        d = tempfile.mkdtemp(prefix="a18_a10_")
        try:
            run = bl.run(publish_poll_load, world_size=3, args=(d, cleanup), timeout=10)
            races = run.races()
            found[cleanup] = (run.ok, len(races))
            print(f"clean-up={cleanup}: finished={run.ok} values={run.values} races={len(races)}")
            for race in races[:1]:
                print("   ", race)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if found[True][0] and found[True][1]:
        print("BROKEN: an ordered clean-up after the barrier turns the published file's loads into races")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
