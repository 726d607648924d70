"""Promise 4: another ordering primitive is accepted; no false race on correct code.

Rank 0 writes a file, then publishes "done" with store.compare_set(key, "", "done"). The other ranks poll the
key with compare_set(key, "x", "y"), which never writes (the expected "x" never matches) and returns the key's
current value: once it returns b"done" the rank has read rank 0's write of the key, which came after the file
was closed. The model orders a store.get that returned "done" after that set, but not a compare_set that
returned it, so the read is reported as a race.
Exits 0 when the compare_set program has no race, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist
from torch.distributed.distributed_c10d import _get_default_store

import barrierlab as bl


def poll_get(d):
    st, p = _get_default_store(), os.path.join(d, "a")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        with open(p, "w") as f:
            f.write("x")
        st.compare_set("state", "", "done")
        return 0
    while st.get("state") != b"done":
        time.sleep(0.01)
    with open(p) as f:
        return f.read()


def poll_compare_set(d):
    st, p = _get_default_store(), os.path.join(d, "a")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        with open(p, "w") as f:
            f.write("x")
        st.compare_set("state", "", "done")
        return 0
    while st.compare_set("state", "x", "y") != b"done":
        time.sleep(0.01)
    with open(p) as f:
        return f.read()


def main() -> int:
    got = {}
    for fn in (poll_get, poll_compare_set):
        d = tempfile.mkdtemp(prefix="a18_a04_")
        try:
            run = bl.run(fn, world_size=3, args=(d,), timeout=10)
            races = run.races()
            got[fn.__name__] = (run.ok, len(races))
            print(f"{fn.__name__}: finished={run.ok} values={run.values} races={len(races)}")
            for race in races[:1]:
                print("   ", race)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if got["poll_compare_set"][0] and got["poll_compare_set"][1]:
        print("BROKEN: a compare_set that returned rank 0's value is not an ordering read")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
