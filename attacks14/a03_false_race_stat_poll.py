"""Promise 4: no false race on correct code. Rank 0 publishes a file whole (os.replace); the other ranks wait for it
with os.stat / os.path.getsize (instead of os.path.exists, which barrierlab's ordering model knows), then read it.
The model orders an exists()-poll of a rename-published file; the same wait through os.stat is reported as a race.
Exit 0 if run.races() is empty for the stat and getsize polls (and, as a control, for exists), 1 if not."""

import os
import shutil
import sys
import tempfile

import barrierlab as bl


def publish_then_poll(folder, how):
    import time

    import torch.distributed as dist

    data = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(data + ".tmp", "w") as f:
            f.write("<pad> <unk> the a of")
        os.replace(data + ".tmp", data)
    else:
        give_up = time.monotonic() + 10
        while True:
            if how == "exists":
                if os.path.exists(data):
                    break
            else:
                try:
                    os.stat(data) if how == "stat" else os.path.getsize(data)
                    break
                except FileNotFoundError:
                    pass
            if time.monotonic() > give_up:
                raise TimeoutError("never appeared")
            time.sleep(0.01)
    with open(data) as f:
        return f.read().split()


def main() -> int:
    broken = False
    for how in ("exists", "stat", "getsize"):
        folder = tempfile.mkdtemp(prefix="a14-a03-")
        try:
            run = bl.run(publish_then_poll, 3, args=(folder, how), live=False, timeout=10)
            races = run.races()
            print(f"poll with {how}: statuses {run.statuses}, {len(races)} race(s)")
            for race in races:
                print("   ", str(race).splitlines()[0][:300])
            if not run.ok or races:
                broken = True
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if broken:
        print("BROKEN: a rename-published file waited for with os.stat/os.path.getsize is reported as a race")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
