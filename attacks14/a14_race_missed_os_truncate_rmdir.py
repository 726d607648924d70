"""Promise 4: a real race is reported. Rank 1 reads a results file (and lists a folder) while rank 0, half a second
later and with nothing ordering the two, empties the file or removes the folder. Emptying it with open(path, "w") is
reported by run.races(); emptying it with os.truncate(path, 0), or removing the folder with os.rmdir, is not (neither
call is recorded). Exit 0 if every such race is reported, 1 if one is missed."""

import os
import shutil
import sys
import tempfile

import barrierlab as bl


def change_while_read(kind, folder):
    import os
    import time

    import torch.distributed as dist

    path, sub = os.path.join(folder, "results.txt"), os.path.join(folder, "shards")
    if dist.get_rank() == 0:
        time.sleep(0.5)
        if kind == "open-w":
            open(path, "w").close()
        elif kind == "os.truncate":
            os.truncate(path, 0)
        else:
            os.rmdir(sub)
    else:
        if kind == "os.rmdir":
            os.listdir(sub)
        else:
            with open(path) as f:
                f.read()
    dist.barrier()


def main() -> int:
    missed = []
    for kind in ("open-w", "os.truncate", "os.rmdir"):
        folder = tempfile.mkdtemp(prefix="a14-a14-")
        os.mkdir(os.path.join(folder, "shards"))
        with open(os.path.join(folder, "results.txt"), "w") as f:
            f.write("rank 0: 0.91\nrank 1: 0.88\n")
        try:
            run = bl.run(change_while_read, 2, args=(kind, folder), live=False, timeout=5)
            races = run.races()
            print(
                f"{kind:12} statuses {run.statuses}: {len(races)} race(s)"
                + (f": {str(races[0]).splitlines()[0][:160]}" if races else "")
            )
            if run.ok and not races:
                missed.append(kind)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if missed:
        print(f"BROKEN: unordered changes made with {missed} are not reported")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
