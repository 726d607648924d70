"""a14: a rank that joins init_process_group later than the group's timeout fails under torchrun, passes under
`barrierlab run`.

Promise 3: same exit status and exceptions as torchrun. Rank 2 of 3 spends 5 s before init_process_group
(loading a model, a slow node); the script asks for timeout=2 s. Under torchrun ranks 0 and 1 raise in
init_process_group after 2 s ("... timed out after 2000ms") and the job fails. Under `barrierlab run` every
rank first waits, through the launcher's store, for all ranks to arrive (_rank.py
init_process_group_on_the_launchers_store -> wait_for_every_rank(step="arrived"), with the run's deadline),
so the group's timeout never starts before rank 2 arrives: all three finish, exit 0.

The torchrun reference runs in a network namespace of its own (unshare -n) so that its store, which listens
on every interface, is reachable on loopback only; without unshare it is skipped.
"""

import shutil
import subprocess
import sys
import tempfile

from _common import PY, barrierlab_run, env

SCRIPT = """import os, time, datetime
import torch.distributed as dist
if os.environ["RANK"] == "2":
    time.sleep(5)          # a slow rank: loading a big model before joining
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
dist.barrier()
print("JOINED", dist.get_rank(), flush=True)
dist.destroy_process_group()
"""

folder = tempfile.mkdtemp(prefix="a14-")
try:
    with open(f"{folder}/train.py", "w") as f:
        f.write(SCRIPT)
    reference = None
    if shutil.which("unshare") and shutil.which("ip"):
        command = f"ip link set lo up && {PY} -m torch.distributed.run --standalone --nproc-per-node 3 train.py"
        done = subprocess.run(
            ["unshare", "-n", "bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=120, env=env()
        )
        if "Operation not permitted" not in done.stderr:
            reference = done.returncode
            timed_out = "timed out" in done.stdout + done.stderr
            print(f"torchrun: exit {done.returncode}, init timed out: {timed_out}")
    got = barrierlab_run("train.py", 3, cwd=folder, extra=("--deadline", "40"))
    print(f"barrierlab run: exit {got.returncode}; " + got.stdout.splitlines()[0])
    if got.returncode == 0 and reference not in (None, 0):
        print("BROKEN: torchrun fails (init_process_group times out on the ranks that waited), barrierlab run passes")
        sys.exit(1)
    if got.returncode == 0 and reference is None:
        print(
            "BROKEN (torchrun reference skipped): barrierlab run passes a script whose ranks wait 5 s in "
            "init_process_group(timeout=2 s)"
        )
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
