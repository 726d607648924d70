"""attack22 a06: a file opened "a+" and read back.

Promise (docs/reference.md, "File races"): a read of a file another rank changed that no call ordered is
reported. Rank 0 appends "rank0 ready" to registry.txt; rank 1, 0.3 s later and with nothing ordering it,
opens registry.txt with "a+" (create if missing, read and append), seeks to 0 and reads what is there. The
recorder classes any mode containing "a" as an append, and two appends never conflict, so the read is never
compared. Control: the same read with "r". Exit 0 if the "a+" read's race is reported.
"""

import os
import time

import torch.distributed as dist
from _h import races_of, verdict


def reader(mode):
    def job(d):
        p = os.path.join(d, "registry.txt")
        if dist.get_rank() == 0:
            with open(p, "a") as f:
                f.write("rank0 ready\n")
        else:
            time.sleep(0.3)
            with open(p, mode) as f:
                f.seek(0)
                seen = f.read()
            assert seen == "rank0 ready\n", seen  # it did read rank 0's line
        dist.barrier()

    return job


def main():
    counts = {}
    for mode in ("r", "a+"):
        run, races = races_of(reader(mode))
        assert run.ok, run
        counts[mode] = len(races)
        print(f'mode "{mode}": {len(races)} race(s)')
        for r in races:
            print("   ", r[:200])
    if not counts["r"]:
        print("control missed too")
        raise SystemExit(2)
    verdict(
        counts["a+"] == 0, f'read of rank 0\'s append: reported with "r" ({counts["r"]}), with "a+" ({counts["a+"]})'
    )


if __name__ == "__main__":
    main()
