"""Promise (docs/containment.md, "What a rank's record names"): the kernel reads a recorded file's lines only from a
regular .py file of at most 2 MiB, kept in barrierlab's own bounded cache (64 files, 16 MiB; never linecache):
"A FIFO, a device or a 300 MB file named there costs nothing"; the brief: nothing a rank writes can "grow the
kernel's memory without bound".
Attack: the rank function is compiled under the name of a text file, big.txt (not .py); the loop runs once more
on rank 0 (the uneven-loop rule). When the kernel asks for the diagnosis, big.txt holds 36 MB of 6 million short
lines. diagnose._after_the_loop reads it with linecache.getlines(), which keeps every line in linecache's cache,
for good. Measured: the kernel's RSS before and after run.diagnosis, and what linecache holds."""

from _h import run_driver, verdict

DRIVER = r'''
import gc, linecache, os, sys, time, torch, torch.distributed, barrierlab as bl
path = os.path.abspath("big.txt")
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
exec(compile(SRC, path, "exec"), ns)
bl.run(lambda: 0, 2)  # warm up
run = bl.run(ns["body"], 2, timeout=2, deadline=5)
with open(path, "w") as f:  # what the folder names, by the time the diagnosis is read
    f.write(")\n")
    f.write("zzzz\n" * 6_000_000)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
gc.collect(); before = rss()
t = time.monotonic()
d = run.diagnosis
took = time.monotonic() - t
os.remove(path)
gc.collect(); after = rss()
held = sum(len(v[2]) for v in linecache.cache.values() if len(v) == 4 and v[2])
print(f"diagnosis in {took:.2f} s: {str(d).splitlines()[0][:150]}")
print(f"KERNEL RSS before the diagnosis {before:.0f} MiB, after it (file removed, gc run) {after:.0f} MiB: +{after - before:.0f} MiB")
print(f"linecache holds {held:,} lines; big.txt in linecache: {path in linecache.cache}")
'''

r = run_driver(DRIVER, timeout=150)
r.show()
import re

m = re.search(r": \+(-?\d+) MiB", r.out)
grew = int(m.group(1)) if m else None
verdict(
    grew is None or grew > 64,
    f"the kernel kept {grew} MiB more after reading the diagnosis of a run naming a 36 MB text file",
)
