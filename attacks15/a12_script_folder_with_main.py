"""a12: `torchrun --standalone --nproc-per-node 2 appdir` runs a folder's __main__.py (as `python appdir` does; a
.zip with __main__.py works in both), but `barrierlab run appdir -n 2` refuses it ("a folder, not a script").
Promise 3: a program that passes under torchrun passes under barrierlab run.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import subprocess
import sys
import tempfile

MAIN = """\
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
"""


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a12-")
    try:
        app = os.path.join(folder, "appdir")
        os.mkdir(app)
        with open(os.path.join(app, "__main__.py"), "w") as f:
            f.write(MAIN)
        env = {**os.environ, "BARRIERLAB_LIVE": "0"}
        bl = subprocess.run(
            [sys.executable, "-m", "barrierlab", "run", app, "-n", "2"],
            capture_output=True,
            text=True,
            timeout=200,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=folder,
        )
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        tr = subprocess.run(
            [torchrun, "--standalone", "--nproc-per-node", "2", app],
            capture_output=True,
            text=True,
            timeout=200,
            stdin=subprocess.DEVNULL,
            cwd=folder,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("torchrun exit code:", tr.returncode)
    print("barrierlab run exit code:", bl.returncode, (bl.stdout + bl.stderr).strip().splitlines()[-1][:200])
    if tr.returncode == 0 and bl.returncode != 0:
        print("BROKEN: torchrun runs the folder's __main__.py, barrierlab run refuses it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
