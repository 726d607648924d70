"""a05: a script whose rank 1 lowers its own RLIMIT_NOFILE at its end (to its lowest free descriptor number, after destroy_process_group: it opens no new file after) passes under torchrun
(exit 0), but under `barrierlab run` rank 1 "exited with code 74:
barrierlab could not write this rank's outcome ... Too many open files" and the command exits 1.
Promise 3: a program that passes under torchrun passes under barrierlab run.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = """\
import os, resource, torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
rank = dist.get_rank()
dist.destroy_process_group()
if rank == 1:  # e.g. a final phase that must open no new file
    free = os.open(os.devnull, os.O_RDONLY)  # the lowest free descriptor number
    os.close(free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print("rank", rank, "done", flush=True)
"""


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a05-")
    try:
        path = os.path.join(folder, "train.py")
        with open(path, "w") as f:
            f.write(SCRIPT)
        env = {**os.environ, "BARRIERLAB_LIVE": "0"}
        bl = subprocess.run(
            [sys.executable, "-m", "barrierlab", "run", path, "-n", "4"],
            capture_output=True,
            text=True,
            timeout=200,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=folder,
        )
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        tr = subprocess.run(
            [torchrun, "--standalone", "--nproc-per-node", "4", path],
            capture_output=True,
            text=True,
            timeout=200,
            stdin=subprocess.DEVNULL,
            cwd=folder,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("torchrun exit code:", tr.returncode)
    print("barrierlab run exit code:", bl.returncode)
    print("\n".join(bl.stdout.splitlines()[:5]))
    if tr.returncode == 0 and bl.returncode != 0:
        print("BROKEN: torchrun passes the script, barrierlab run fails it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
