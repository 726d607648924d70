"""Promise (plot.timeline docstring; reference 'A timeline draws ...'): the figure shows what the record holds —
'A call a rank never left runs to the end of the run with a red X'. Run: bl.run of a function making 6,000
dist.barrier() calls on 2 ranks; every rank finished (Run and diagnosis say so); the records are cut in the
middle (events.LINES_KEPT, 'the first and last events of each rank are kept'). Checked: the timeline
(Agg, saved as PNG) does not say that a rank never left a call / was stuck until the run was stopped, and the
right edge does not say a rank waited ~100% of the run, when every rank finished and the middle was dropped.
Also: the figure is made and saved within 10 s."""

import os
import sys
import tempfile

from _h import PY, run, verdict

CODE = r"""
import sys, time, json
import matplotlib
matplotlib.use("Agg")
from matplotlib.text import Text
import torch.distributed as dist
import barrierlab as bl

def many(n):
    for _ in range(n):
        dist.barrier()
    return n

run = bl.run(many, 2, args=(int(sys.argv[2]),), timeout=30, deadline=90, live=False)
t = time.monotonic()
fig = run.timeline()
fig.savefig(sys.argv[1], dpi=80)
took = time.monotonic() - t
texts = [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]
print(json.dumps({"repr": repr(run).splitlines()[0], "statuses": [str(r.status) for r in run.ranks],
                  "dropped": {str(k): str(v) for k, v in run.events_dropped.items()},
                  "head": str(run.diagnosis).splitlines()[0][:200], "took": took, "texts": texts}))
"""

png = os.path.join(tempfile.gettempdir(), f"a25_a10_{os.getpid()}.png")
keep = "--keep" in sys.argv
try:
    rc, out, err = run([PY, "-c", CODE, png, "6000"], timeout=110)
    import json

    if rc != 0:
        print("run failed", rc, out[-2000:], err[-2000:])
        sys.exit(2)
    d = json.loads(out.strip().splitlines()[-1])
finally:
    if not keep and os.path.exists(png):
        os.remove(png)
print(d["repr"], d["statuses"], "dropped:", d["dropped"])
print("diagnosis:", d["head"])
print(f"timeline + savefig: {d['took']:.2f} s")
bad = [t for t in d["texts"] if "never left" in t or "stuck" in t or "(100%)" in t]
print("figure texts that say stuck / 100% waiting:", bad)
broken = []
if all(s == "finished" for s in d["statuses"]) and bad:
    broken.append(f"every rank finished, the figure says {bad}")
if d["took"] > 10:
    broken.append(f"timeline + savefig took {d['took']:.1f} s")
if keep:
    print("kept", png)
verdict(broken)
