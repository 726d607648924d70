"""Promise 4: no false race on correct code. Rank 0 publishes a file whole (os.replace of a finished temporary
file), then signals "done" with a marker: an empty DONE file (the _SUCCESS-file pattern) or a DONE folder made
with os.mkdir (atomic). The other ranks wait until they see the marker, then read the file: on a local file
system the read can only come after the write. run.races() should find nothing. Exit 0 if it finds nothing in
both variants, 1 (printing the races) if it reports the handoff as a race."""

import os
import shutil
import sys
import tempfile

import barrierlab as bl


def publish_then_signal(folder, marker_kind):
    import time

    import torch.distributed as dist

    data, done = os.path.join(folder, "vocab.txt"), os.path.join(folder, "DONE")
    if dist.get_rank() == 0:
        time.sleep(0.3)  # building takes a while
        with open(data + ".tmp", "w") as f:
            f.write("<pad> <unk> the a of")
        os.replace(data + ".tmp", data)  # whole, or not there
        if marker_kind == "file":
            open(done, "w").close()  # then: done
        else:
            os.mkdir(done)
    else:
        give_up = time.monotonic() + 10
        while not (os.path.exists(done) if marker_kind == "file" else os.path.isdir(done)):
            if time.monotonic() > give_up:
                raise TimeoutError("no DONE marker")
            time.sleep(0.01)
    with open(data) as f:
        return f.read().split()


def main() -> int:
    broken = False
    for kind in ("file", "mkdir"):
        folder = tempfile.mkdtemp(prefix="a14-a02-")
        try:
            run = bl.run(publish_then_signal, 3, args=(folder, kind), live=False, timeout=10)
            races = run.races()
            print(
                f"marker={kind}: statuses {run.statuses}, values ok: {run.values == [['<pad>', '<unk>', 'the', 'a', 'of']] * 3}, "
                f"{len(races)} race(s)"
            )
            for race in races:
                print("   ", str(race).splitlines()[0][:300])
            if not run.ok:
                print("   the run itself failed: not the point of this repro")
                broken = True
            elif races:
                broken = True
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if broken:
        print("BROKEN: correct done-marker handoffs reported as races")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
