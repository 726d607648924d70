"""Promise (docs/containment.md, "What a rank's record names"): "the kernel and barrierlab report read the line of
code only from a notebook cell already in memory or a regular .py file of at most 2 MiB ... (never linecache) ...
A FIFO, a device or a 300 MB file named there costs nothing"; the call returns within its deadline.
Attack: the rank function's code is compiled with a file name that is a FIFO (loop.py, made with mkfifo) and runs
a loop one more time on rank 0 than on rank 1 (the uneven-loop rule). diagnose._after_the_loop reads that file with
linecache.getlines(), which opens it: open() of a FIFO with no writer blocks for ever. Does the kernel get the
Run and its diagnosis back?"""

from _h import run_driver, verdict

DRIVER = r'''
import os, sys, time, threading, faulthandler, torch, torch.distributed, barrierlab as bl
fifo = os.path.abspath("loop.py")
os.mkfifo(fifo)
SRC = """import torch, torch.distributed as dist
def body():
    rank = dist.get_rank()
    for i in range(2 + (rank == 0)):
        dist.barrier()
    t = torch.ones(1)
    dist.all_reduce(t)
    return rank
"""
ns = {}
exec(compile(SRC, fifo, "exec"), ns)
body = ns["body"]
bl.run(lambda: 0, 2)  # warm up
faulthandler.dump_traceback_later(15, exit=True)  # if it hangs: show where, then end
t = time.monotonic()
run = bl.run(body, 2, timeout=2, deadline=5)
print(f"bl.run returned after {time.monotonic() - t:.2f} s", flush=True)
print([(e.name, e.line) for e in run[0].events], [(e.name, e.line) for e in run[1].events], flush=True)
text = repr(run) + "\n" + str(run.diagnosis)
print(f"repr(run) after {time.monotonic() - t:.2f} s", flush=True)
print(text[:1500])
faulthandler.cancel_dump_traceback_later()
'''

r = run_driver(DRIVER, timeout=90)
r.show(6000)
ok = "repr(run) after" in r.out
hung_in = "linecache" in r.err
verdict(
    not ok,
    (
        "the kernel got its Run and diagnosis"
        if ok
        else "the kernel never got past the diagnosis: it blocked opening the FIFO"
        + (" in linecache (stack above)" if hung_in else "")
    ),
)
