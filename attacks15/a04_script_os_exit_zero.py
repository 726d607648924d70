"""a04: a training script that ends with os._exit(0) (to skip interpreter teardown) passes under torchrun
(exit code 0), but `barrierlab run script.py -n 4` exits 1 and reports every rank as "exited with code 0 before
returning from the function" / "did not finish".
Promise 3: a program that passes under torchrun passes under barrierlab run.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = """\
import os, sys
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)
"""


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a04-")
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
    print("\n".join(bl.stdout.splitlines()[:8]))
    if tr.returncode == 0 and bl.returncode != 0:
        print("BROKEN: torchrun passes the script, barrierlab run fails it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
