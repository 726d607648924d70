"""Promise 4: another ordering primitive is accepted; no false race on correct code.

Rank 0 writes data.txt, closes it, then creates an empty DONE marker; rank 1 polls for the marker and then
reads data.txt. Polled with os.path.exists, Path.exists, os.stat or os.path.getmtime, the model orders the
read after the write (a marker polled for and found). Polled with os.access(DONE, os.F_OK),
os.path.lexists(DONE) or pathlib.Path(DONE).stat() -- the same wait -- the read is reported as a race: those
looks are not recorded (Path.stat calls os.stat from the standard library, which the recorder skips).
Exits 0 when every poll is accepted, 1 otherwise.
"""

import os
import pathlib
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def _found(look):
    try:
        look()
        return True
    except FileNotFoundError:
        return False


LOOKS = {
    "os.path.exists": lambda p: os.path.exists(p),
    "os.access(F_OK)": lambda p: os.access(p, os.F_OK),
    "os.path.lexists": lambda p: os.path.lexists(p),
    "Path.stat()": lambda p: _found(lambda: pathlib.Path(p).stat()),
}


def poll(d, how):
    data, done = os.path.join(d, "data.txt"), os.path.join(d, "DONE")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        with open(data, "w") as f:
            f.write("x")
        open(done, "w").close()  # the marker, made after data.txt is closed
        return 0
    while not LOOKS[how](done):
        time.sleep(0.01)
    with open(data) as f:
        return f.read()


def main() -> int:
    refused = []
    for how in LOOKS:
        d = tempfile.mkdtemp(prefix="a18_a17_")
        try:
            run = bl.run(poll, world_size=2, args=(d, how), timeout=10)
            races = run.races()
            print(f"{how}: finished={run.ok} values={run.values} races={len(races)}")
            if run.ok and races:
                refused.append(how)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if refused and "os.path.exists" not in refused:
        print("BROKEN: the same marker wait is reported as a race when polled with", ", ".join(refused))
        return 1
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
