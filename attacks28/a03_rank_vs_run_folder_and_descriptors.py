"""a03 — a rank acting on barrierlab's own descriptors and run folder: dup2 /dev/null over every descriptor,
close every descriptor, swap the run folder for a symlink to a folder of FIFOs, swap it for a symlink to a folder
of the user's (must not be emptied), replace its stdout/stderr files by FIFOs, link another rank's events file to
/dev/zero, write 200 MB without a newline into its events file.
Promise (reference, containment.md): nothing a rank sends back (stderr, events file, outcome file) can hurt the
caller or make bl.run raise; every call ends by its deadline (+ about 0.5 s); a run removes only its own folder;
the next run works."""

import sys

from _h import driver, finish, result_line

CODE = r"""
import json, os, stat, sys, time
import barrierlab as bl

def runfolder():
    return os.readlink("/proc/self/fd/600")

def dup2null():
    import torch.distributed as dist
    dist.barrier()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
        if fd not in (0, null):
            try: os.dup2(null, fd)
            except OSError: pass
    return 5

def closeall():
    import torch.distributed as dist
    dist.barrier()
    os.closerange(3, 65536)
    return 5

def fifo_swap():
    import torch.distributed as dist
    dist.barrier()
    if dist.get_rank() == 1:
        d = runfolder()
        os.rename(d, WORK + "/aside-fifo")
        os.mkdir(WORK + "/fifos")
        for r in range(2):
            for part in ("outcome", "events", "stdout", "stderr", "stack", "flight"):
                os.mkfifo(f"{WORK}/fifos/rank{r}.{part}")
        os.mkfifo(WORK + "/fifos/segments")
        os.symlink(WORK + "/fifos", d)
    return 5

def precious_swap():
    import torch.distributed as dist
    dist.barrier()
    if dist.get_rank() == 0:
        d = runfolder()
        os.rename(d, WORK + "/aside-precious")
        os.symlink(WORK + "/precious", d)
    return 5

def std_fifos():
    import torch.distributed as dist
    dist.barrier()
    d = runfolder()
    r = dist.get_rank()
    for part in ("stdout", "stderr"):
        os.unlink(f"{d}/rank{r}.{part}")
        os.mkfifo(f"{d}/rank{r}.{part}")
    print("after the swap", flush=True)
    return 5

def events_zero():
    import torch.distributed as dist
    dist.barrier()
    d = runfolder()
    if dist.get_rank() == 1:
        os.unlink(f"{d}/rank0.events")
        os.symlink("/dev/zero", f"{d}/rank0.events")
        os.unlink(f"{d}/rank0.stderr")
        os.symlink("/dev/zero", f"{d}/rank0.stderr")
    dist.barrier()
    return 5

def events_giant_line():
    import torch.distributed as dist
    dist.barrier()
    chunk = b"x" * (1 << 20)
    for _ in range(200):
        os.write(512, chunk)
    dist.barrier()
    return 5

os.mkdir(WORK + "/precious")
with open(WORK + "/precious/keep.txt", "w") as f:
    f.write("the user's file")
cases = {"dup2null": dup2null, "closeall": closeall, "fifo_swap": fifo_swap, "precious_swap": precious_swap,
         "std_fifos": std_fifos, "events_zero": events_zero, "events_giant_line": events_giant_line}
only = ONLY
bl.run(lambda: 1, 2)
out = {}
for name, fn in cases.items():
    if only and name not in only:
        continue
    t0 = time.monotonic()
    rec = {}
    try:
        run = bl.run(fn, 2, timeout=2, deadline=6)
        rec["secs"] = round(time.monotonic() - t0, 2)
        try:
            rec["repr"] = repr(run)[:400]
            rec["diag"] = str(run.diagnosis)[:200]
            rec["status"] = [str(r.status) for r in run]
            rec["values"] = [repr(r.value) for r in run]
        except BaseException as e:
            rec["error"] = "reading the run raised " + type(e).__name__ + ": " + str(e)[:200]
    except BaseException as e:
        rec["secs"] = round(time.monotonic() - t0, 2)
        rec["error"] = "bl.run raised " + type(e).__name__ + ": " + str(e)[:300]
    t1 = time.monotonic()
    try:
        nxt = bl.run(lambda: 1, 2, timeout=2, deadline=6)
        rec["next"] = [str(r.status) for r in nxt]
    except BaseException as e:
        rec["next"] = "raised " + type(e).__name__ + ": " + str(e)[:200]
    rec["next_secs"] = round(time.monotonic() - t1, 2)
    rec["precious"] = os.path.exists(WORK + "/precious/keep.txt")
    print(name, rec, flush=True)
    out[name] = rec
print("RESULT " + json.dumps(out))
"""

only = sys.argv[1:]
d = driver(CODE.replace("only = ONLY", f"only = {only!r}"), timeout=115)
res = result_line(d["out"])
broken = []
if res is None:
    broken.append(
        f"no result within {d['seconds']:.0f} s (rc {d['rc']}); stdout: {d['out'][-1500:]} stderr: {d['err'][-800:]}"
    )
else:
    for name, r in res.items():
        print(name, r)
        if "error" in r:
            broken.append(f"{name}: {r['error']}")
        if r["secs"] > 7.0:
            broken.append(f"{name}: bl.run took {r['secs']} s with deadline=6")
        if r["next"] != ["finished", "finished"]:
            broken.append(f"{name}: the next run: {r['next']}")
        if not r["precious"]:
            broken.append(f"{name}: the user's file precious/keep.txt is gone")
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "a rank acting on the run folder and barrierlab's descriptors")
