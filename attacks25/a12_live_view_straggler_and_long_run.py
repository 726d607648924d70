"""Promise (reference, `live`): while bl.run waits, a notebook shows one line per rank, updated a few times a
second ('in barrier #3 since 2.1 s — cell In[5], line 4', 'finished', ...); when the run ends the lines give way
to the result. Run in a process that poses as a lab kernel (IPython.display captured; JPY_SESSION_NAME set):
(1) 16 ranks, rank 11 works 1.5 s in span 'compute' before each of 3 barriers: some update must show rank 11
working in 'compute' while the 15 others wait in the same barrier number; the first update within 1.5 s of the
start; the view erased at the end. (2) 4 ranks, 3,000 barriers: the barrier numbers shown keep rising (the view
keeps up with a flood of events) and updates keep coming at least every second."""

import json
import re
import sys

from _h import PY, run, verdict

CODE = r"""
import os, re, sys, time, json, html as H
os.environ["JPY_SESSION_NAME"] = "x.ipynb"
import IPython.display as D
shots = []
class Handle:
    def update(self, content, metadata=None):
        shots.append((time.monotonic(), content.data))
def display(content, display_id=True, metadata=None):
    shots.append((time.monotonic(), content.data)); return Handle()
D.display = display
import barrierlab.live as L
L._in_kernel = lambda: True
import torch.distributed as dist
import barrierlab as bl

def straggle():
    import time
    for step in range(3):
        if dist.get_rank() == 11:
            with bl.span("compute"):
                time.sleep(1.5)
        dist.barrier()

def many(n):
    for _ in range(n):
        dist.barrier()

def text(h):
    return re.sub(r"\s+", " ", H.unescape(re.sub(r"<[^>]+>", " ", h)))

bl.run(lambda: None, 16, live=False)  # the warm process starts with a lab kernel: not counted
res = {}
for name, fn, n, kw in (("straggle", straggle, 16, {}), ("many", many, 4, {"args": (3000,)})):
    shots.clear()
    t0 = time.monotonic()
    run = bl.run(fn, n, timeout=30, live=True, **kw)
    res[name] = {"repr": repr(run).splitlines()[0], "shots": [(t - t0, text(h)) for t, h in shots], "end": time.monotonic() - t0}
print(json.dumps(res))
"""
rc, out, err = run([PY, "-c", CODE], timeout=110)
if rc != 0:
    print(rc, out[-2000:], err[-2000:])
    sys.exit(2)
res = json.loads(out.strip().splitlines()[-1])
broken = []
s = res["straggle"]
print(s["repr"], f"{len(s['shots'])} updates, first at {s['shots'][0][0]:.2f} s" if s["shots"] else "no updates")
good = 0
for _t, tx in s["shots"]:
    r11 = re.search(r"rank 11 (working in span 'compute'|waiting in barrier #\d+)", tx)
    others = set(re.findall(r"rank (?!11 )\d+ waiting in barrier #(\d+)", tx))
    n_wait = len(re.findall(r"rank (?!11 )\d+ waiting in barrier #\d+", tx))
    if r11 and r11.group(1).startswith("working") and n_wait == 15 and len(others) == 1:
        good += 1
print(f"updates showing rank 11 computing while the 15 others wait in one barrier: {good}")
if not s["shots"] or s["shots"][0][0] > 1.5:
    broken.append("no update within 1.5 s")
if good == 0:
    broken.append("no update showed the straggler working while the others waited")
if s["shots"] and s["shots"][-1][1].strip():
    broken.append(f"the view was not erased at the end: {s['shots'][-1][1][:100]}")
neg = [tx for _, tx in s["shots"] + res["many"]["shots"] if "since -0.0 s" in tx]
if neg:
    print(f"note: {len(neg)} updates say 'since -0.0 s' (a negative zero)")
m = res["many"]
nums = [max(map(int, re.findall(r"barrier #(\d+)", tx)) or [0]) for _, tx in m["shots"] if "barrier #" in tx]
times = [t for t, _ in m["shots"]]
gaps = [b - a for a, b in zip(times, times[1:])]
print(
    m["repr"],
    f"{len(m['shots'])} updates; barrier numbers shown: {nums[:3]} ... {nums[-3:]}; largest gap {max(gaps):.2f} s",
)
if any(b < a for a, b in zip(nums, nums[1:])) or not nums or nums[-1] < 1000:
    broken.append(f"barrier numbers shown do not keep rising to the end: {nums}")
if max(gaps) > 1.0:
    broken.append(f"an update gap of {max(gaps):.2f} s")
verdict(broken)
