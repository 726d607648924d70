"""Promise 3: a script that passes under torchrun passes under `barrierlab run`. torchrun gives every worker
OMP_NUM_THREADS=1 when it starts more than one per node and the variable is not set (its "Setting OMP_NUM_THREADS
environment variable for each process to be 1 in default" warning); a script that sizes its thread pool from it
(`torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))`) passes there and raises KeyError under
`barrierlab run`. Exit 0 if both pass (or both fail), 1 if torchrun passes and barrierlab run fails."""

import os
import subprocess
import sys
import tempfile

SCRIPT = """\
import os

import torch
import torch.distributed as dist

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # as torchrun set it
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print("rank", dist.get_rank(), "threads", torch.get_num_threads(), "sum", t.item())
dist.destroy_process_group()
"""


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a14-a05-")
    script = os.path.join(folder, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    bindir = os.path.dirname(sys.executable)
    try:
        torchrun = subprocess.run(
            [os.path.join(bindir, "torchrun"), "--standalone", "--nproc-per-node", "2", script],
            capture_output=True,
            text=True,
            timeout=150,
            env=env,
            cwd=folder,
        )
        ours = subprocess.run(
            [sys.executable, "-m", "barrierlab", "run", script, "-n", "2", "--timeout", "10"],
            capture_output=True,
            text=True,
            timeout=100,
            env=env,
            cwd=folder,
        )
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    print(
        f"torchrun: exit {torchrun.returncode}; "
        + " | ".join(line for line in torchrun.stdout.splitlines() if line.startswith("rank"))
    )
    print(f"barrierlab run: exit {ours.returncode}")
    print("   " + "\n   ".join(ours.stdout.splitlines()[:4]))
    if torchrun.returncode == 0 and ours.returncode != 0:
        print("BROKEN: passes under torchrun, fails under barrierlab run (OMP_NUM_THREADS is not set in its ranks)")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
