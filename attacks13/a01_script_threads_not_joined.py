"""Promise 3: a script that passes under torchrun passes under `barrierlab run`.

`python train.py` (and so every torchrun worker) joins non-daemon threads and ThreadPoolExecutor workers before
the interpreter exits (threading._shutdown), so work handed to a background thread (an async checkpoint save)
completes. Checked under torchrun by hand: ckpt files written by both. Under `barrierlab run` the ranks end with
os._exit after atexit handlers only: the files are never written, yet every rank is reported "finished".
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TempDir, barrierlab  # noqa: E402

SCRIPT = r"""
import sys, threading, time
from concurrent.futures import ThreadPoolExecutor
import torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
def save(name):
    time.sleep(0.5)
    with open(f"{sys.argv[1]}/{name}{r}", "w") as f:
        f.write("ok")
threading.Thread(target=save, args=("thread",)).start()
ThreadPoolExecutor(1).submit(save, "pool")
dist.destroy_process_group()
"""

with TempDir() as d:
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    out = os.path.join(d, "out")
    os.mkdir(out)
    p = barrierlab("run", script, "-n", "2", "--", out)
    written = sorted(os.listdir(out))
    expected = ["pool0", "pool1", "thread0", "thread1"]
    if p.returncode == 0 and written == expected:
        print("held: background threads' files written", written)
        sys.exit(0)
    print(f"BROKEN: exit code {p.returncode}, files written {written}, expected {expected} (as under torchrun)")
    print(p.stdout[:600])
    sys.exit(1)
