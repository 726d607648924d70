"""Promise 5 (docs/reference.md: a --timeline that "names a folder, FIFO or device, ends the command at once with
a one-line error and exit code 2"): `--timeline FIFO` where the FIFO's name has no extension.

__main__._timeline_file adds ".png" first and checks the type of NAME.png, not of the path typed: the run
goes ahead and a new regular file FIFO.png is written beside the FIFO (`--timeline /dev/null` likewise
wrote /dev/null.png, a 60 kB PNG in /dev)."""

import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

SCRIPT = "import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.barrier()\n"


def main():
    folder = tempfile.mkdtemp()
    try:
        fifo = os.path.join(folder, "figure")
        os.mkfifo(fifo)
        with open(os.path.join(folder, "train.py"), "w") as f:
            f.write(SCRIPT)
        env = {**os.environ, "PYTHONPATH": SRC}
        cmd = [sys.executable, "-m", "barrierlab", "run", "train.py", "-n", "2", "--timeline", fifo]
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=200)
        made = sorted(os.listdir(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("exit status", done.returncode, "| last line:", (done.stdout + done.stderr).strip().splitlines()[-1])
    print("folder now holds", made)
    if done.returncode != 2:
        print("BROKEN: --timeline naming a FIFO was not refused; the run went ahead")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
