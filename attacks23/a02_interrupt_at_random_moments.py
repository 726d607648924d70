"""Promise (docs/lab.md, "If a cell is interrupted"): Interrupt stops the run and ends its ranks at once
(0.1-0.2 s); the kernel and its variables stay, and the next bl.run works as usual. Attack: a kernel-like
process interrupts (SIGINT, as Jupyter's interrupt button sends) 25 bl.run calls at random moments from 0 to
0.4 s in (launch, barrier wait, value return, unpickling, a check's run), then checks that every rank it started
is gone within 1 s and that a following bl.run and a check still give right answers. Held if all of that is so."""

import sys

from _common import python

CODE = r"""
import os, random, signal, threading, time, tempfile
import torch, torch.distributed as dist
import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab

PIDS = tempfile.mkdtemp(prefix="a23-pids-")

def work(pids, nap):
    open(os.path.join(pids, str(os.getpid())), "w").close()
    if dist.get_rank() == 1:
        time.sleep(nap)
    dist.barrier()
    return torch.arange(200_000) * dist.get_rank()   # a value to send back and read

def correct(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    dist.barrier()
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()

def interrupt_after(t):
    timer = threading.Timer(t, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer

rng = random.Random(int(os.environ.get("A23_SEED", "23")))
interrupted = 0
slow_stops = []
for i in range(25):
    t = rng.uniform(0.0, 0.4)
    timer = interrupt_after(t)
    try:
        if i % 5 == 4:
            check_vocab(correct, quiet=True)
        else:
            bl.run(work, 4, args=(PIDS, rng.uniform(0, 0.3)), live=False)
        time.sleep(0.6)   # the interrupt lands after the call, in plain kernel code
    except KeyboardInterrupt:
        interrupted += 1
        t0 = time.monotonic()
        alive = None
        while time.monotonic() - t0 < 1.0:
            alive = []
            for p in os.listdir(PIDS):
                try:
                    with open(f"/proc/{p}/stat") as f:
                        if f.read().split(") ")[1][0] != "Z":
                            alive.append(p)
                except FileNotFoundError:
                    pass
            if not alive:
                break
            time.sleep(0.02)
        if alive:
            slow_stops.append((i, round(t, 3), alive))
    finally:
        timer.cancel()

# after all that: a plain run and a check must still be right
after = bl.run(work, 4, args=(PIDS, 0.0), live=False)
values_ok = after.ok and [int(v[1]) for v in after.values] == [0, 1, 2, 3]
verdict = check_vocab(correct, quiet=True)
left = []
for p in os.listdir(PIDS):
    try:
        with open(f"/proc/{p}/stat") as f:
            if f.read().split(") ")[1][0] != "Z":
                left.append(p)
    except FileNotFoundError:
        pass
leftover_dirs = [d for d in os.listdir(tempfile.gettempdir()) if d.startswith("barrierlab-vocab-")]
print(f"interrupted {interrupted}/25; ranks alive 1 s after an interrupt: {slow_stops}")
print(f"next run ok={after.ok} statuses={[str(r.status) for r in after]} values_ok={values_ok}")
if not after.ok:
    print("   ", after.diagnosis.headline)
print(f"check after: {verdict.ok} {verdict.message[:200]}")
print(f"rank processes still alive at the end: {left}")
print(f"check folders left in tmp: {len(leftover_dirs)}")
import shutil; shutil.rmtree(PIDS, ignore_errors=True)
bad = slow_stops or not values_ok or not verdict.ok
print("RESULT", "BROKEN" if bad else "HELD")
"""

rc, out, err = python(CODE, timeout=115)
print(out)
if rc != 0 or "RESULT" not in out:
    print("exit", rc, err[-3000:])
broken = "RESULT HELD" not in out
sys.exit(1 if broken else 0)
