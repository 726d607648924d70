"""attack22 a03: every rank clears a stale lock that is not there.

Promise (docs/reference.md, "File races"): a race is "each read, rename or removal of a file another rank
changed that no call ordered". Both ranks run the usual start-of-job clean-up of a file that does not exist:
os.remove inside suppress(FileNotFoundError), and pathlib's unlink(missing_ok=True). No rank changed the file
(there is none), yet the model reports "rank 1 removed `stale.lock` ... after rank 0 removed it". Compare
os.mkdir of a folder already there, which the recorder marks as changing nothing ("ensure"). Exit 0 if no race
is reported.
"""

import contextlib
import os
import pathlib

import torch.distributed as dist
from _h import races_of, verdict


def with_os_remove(d):
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(d, "stale.lock"))  # never existed
    dist.barrier()


def with_unlink_missing_ok(d):
    pathlib.Path(d, "old.lock").unlink(missing_ok=True)  # never existed
    dist.barrier()


def main():
    bad = 0
    for fn in (with_os_remove, with_unlink_missing_ok):
        run, races = races_of(fn)
        assert run.ok, run
        print(f"{fn.__name__}: {len(races)} race(s)")
        for r in races:
            print("   ", r)
        bad += bool(races)
    verdict(bad > 0, f"{bad} of 2 clean-ups of a file that never existed reported as races")


if __name__ == "__main__":
    main()
