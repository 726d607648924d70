"""Promises 3/4: barrierlab runs what torchrun runs, and a real deadlock is reported. Every torchrun worker is a fresh
interpreter whose torch generator starts from a seed of its own (torch.initial_seed() differs per rank). Ranks
forked by barrierlab's warm process all share its generator state (in a notebook, the same state on every run
of one warm process). A script that
makes a collective depend on an unseeded draw (stochastic depth / LayerDrop that all-reduces the dropped layer's
statistics only when the layer runs) mis-pairs under torchrun (the ranks draw differently) and passes every time under
`barrierlab run` (they draw alike), so the deadlock barrierlab exists to show is hidden; the random module and numpy
are reseeded per rank, torch's generator is not. Exit 0 if barrierlab run's ranks draw differently (or both runs
agree), 1 if torchrun fails and barrierlab run passes with every rank drawing the same numbers."""

import os
import signal
import subprocess
import sys
import tempfile


def run_in_own_group(command, timeout, **kwargs):
    """subprocess.run, in a session of its own: on timeout the whole group (torchrun's workers too) is killed."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        return subprocess.CompletedProcess(command, process.returncode, out, err)


SCRIPT = """\
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=5))
print("rank", dist.get_rank(), "initial_seed", torch.initial_seed(), flush=True)
stats = torch.zeros(4)
for step in range(20):
    if torch.rand(()) < 0.5:  # stochastic depth: this layer runs on this step
        dist.all_reduce(stats)  # sync its batch-norm statistics
    dist.all_reduce(torch.ones(2))  # the step's gradient all-reduce
print("rank", dist.get_rank(), "done", flush=True)
dist.destroy_process_group()
"""


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a14-a11-")
    script = os.path.join(folder, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    env = dict(os.environ, BARRIERLAB_TIMEOUT="5")
    bindir = os.path.dirname(sys.executable)
    try:
        torchrun = run_in_own_group(
            [os.path.join(bindir, "torchrun"), "--standalone", "--nproc-per-node", "3", script],
            timeout=120,
            env=env,
            cwd=folder,
        )
        ours = run_in_own_group(
            [sys.executable, "-m", "barrierlab", "run", script, "-n", "3", "--timeout", "5"],
            timeout=60,
            cwd=folder,
        )
    finally:
        os.unlink(script)
        os.rmdir(folder)
    seeds_torchrun = sorted({line.split()[-1] for line in torchrun.stdout.splitlines() if "initial_seed" in line})
    seeds_ours = sorted({line.split()[-1] for line in ours.stdout.splitlines() if "initial_seed" in line})
    print(f"torchrun: exit {torchrun.returncode}; distinct initial seeds on its 3 ranks: {len(seeds_torchrun)}")
    print(
        f"barrierlab run: exit {ours.returncode}; distinct initial seeds on its 3 ranks: {len(seeds_ours)} {seeds_ours}"
    )
    print("   " + "\n   ".join(ours.stdout.splitlines()[:4]))
    if torchrun.returncode != 0 and ours.returncode == 0 and len(seeds_ours) == 1:
        print(
            "BROKEN: the random-collective deadlock fails under torchrun and passes under barrierlab run, whose ranks "
            "all start from the same torch seed"
        )
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
