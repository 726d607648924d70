"""Promise (docs/torchrun.md, "A folder you did not write"): "report reads a record folder as untrusted input ...
it shows the line of code itself only from a regular .py file of at most 2 MiB ... never from another kind of file
(a text file, a FIFO, a device, a larger file) ... one naming a FIFO cannot make report wait".
Attack: a real torchrun job (2 ranks, barrierlab's torchrun entry) whose function, in a file loop.py, runs a loop one
more time on rank 0 (the uneven-loop rule). After the job, loop.py is replaced by a FIFO (as a folder from
elsewhere names whatever it likes). Does `barrierlab report FOLDER` finish?"""

from _h import run_driver, verdict

MODULE = r"""
import torch, torch.distributed as dist
from barrierlab.torchrun import main

def body():
    rank = dist.get_rank()
    for i in range(2 + (rank == 0)):
        dist.barrier()
    t = torch.ones(1)
    dist.all_reduce(t)
    return rank

if __name__ == "__main__":
    main(body)
"""

DRIVER = r"""
import os, subprocess, sys, time
env = dict(os.environ, BARRIERLAB_RECORD_DIR=os.path.abspath("records"), BARRIERLAB_TIMEOUT="3")
job = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                      "loop.py"], env=env, capture_output=True, text=True, timeout=100)
print("torchrun job exit code", job.returncode)
print("records:", sorted(os.listdir("records")))
os.remove("loop.py")
os.mkfifo("loop.py")
t = time.monotonic()
try:
    rep = subprocess.run([sys.executable, "-c", "import faulthandler, runpy, sys; faulthandler.dump_traceback_later(12, exit=True); "
                          "sys.argv = ['barrierlab', 'report', 'records']; runpy.run_module('barrierlab', run_name='__main__')"],
                         capture_output=True, text=True, timeout=40)
    print(f"REPORT exit {rep.returncode} after {time.monotonic() - t:.1f} s")
    print(rep.stdout[-1500:])
    print("report's stderr:", rep.stderr[-1500:])
except subprocess.TimeoutExpired as e:
    print(f"REPORT still running after {time.monotonic() - t:.1f} s: killed")
"""

r = run_driver(DRIVER, files={"loop.py": MODULE}, timeout=200)
r.show()
hung = "Timeout (0:00:12)" in r.out or "REPORT still running" in r.out
verdict(
    hung,
    "barrierlab report "
    + ("hung for 12 s on the FIFO (faulthandler's stack above) and was ended" if hung else "finished"),
)
