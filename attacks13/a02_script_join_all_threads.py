"""Promise 3: a script that joins every thread but the main one before it exits (a common 'wait for my workers'
idiom) finishes at once under torchrun (after init_process_group a worker has only MainThread; checked by hand)
but under `barrierlab run` it joins barrierlab's own daemon threads (barrierlab-watchdog, barrierlab-flight)
and is stopped at the deadline, reported as the script's hang."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TempDir, barrierlab  # noqa: E402

SCRIPT = r"""
import threading
import torch.distributed as dist
dist.init_process_group("gloo")
print("threads:", [t.name for t in threading.enumerate()])
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join()
dist.destroy_process_group()
"""

with TempDir() as d:
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    p = barrierlab("run", script, "-n", "2", "--timeout", "2", "--deadline", "4")
    if p.returncode == 0:
        print("held")
        sys.exit(0)
    print(f"BROKEN: exit code {p.returncode}")
    print(p.stdout[:900])
    sys.exit(1)
