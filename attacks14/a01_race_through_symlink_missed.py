"""Promise 4: a real race is reported. Rank 0 downloads a file the way huggingface_hub's cache does (write a blob,
rename it into place, symlink it into the snapshot folder; the cache's folders exist from an earlier download); rank 1 reads the snapshot path with no barrier, and wins
only by timing (it sleeps first). run.races() should report the read. Exit 0 if it does, 1 if it misses it."""

import os
import shutil
import sys
import tempfile

import barrierlab as bl


def download_then_load(d):
    import os
    import time

    import torch.distributed as dist

    blob = os.path.join(d, "blobs", "abc123")
    snap = os.path.join(d, "snapshots", "main", "vocab.txt")
    if dist.get_rank() == 0:
        with open(blob + ".incomplete", "w") as f:
            f.write("hello world\n")
        os.replace(blob + ".incomplete", blob)
        os.symlink(blob, snap)
    else:
        time.sleep(1.0)  # no barrier: it comes out right by timing only
    with open(snap) as f:  # every rank loads it, rank 1 with nothing ordering it after rank 0's download
        words = f.read().split()
    dist.barrier()
    return len(words)


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a14-a01-")
    os.makedirs(os.path.join(folder, "blobs"))  # the cache exists already (an earlier download)
    os.makedirs(os.path.join(folder, "snapshots", "main"))
    try:
        run = bl.run(download_then_load, 2, args=(folder,), live=False, timeout=5)
        print(repr(run))
        races = run.races()
        print("races():", races)
        if [r.status for r in run] != ["finished", "finished"]:
            print("BROKEN? the run did not finish as expected")
            return 1
        if not races:
            print(
                "BROKEN: rank 1 read snapshots/main/vocab.txt (a symlink rank 0 made to the blob it wrote) with "
                "nothing ordering it after rank 0's writes, and run.races() reported nothing"
            )
            return 1
        print("held: the race was reported")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
