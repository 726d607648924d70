"""Promise: the timeline shows what the record holds and tells the same story as the diagnosis; a release line
means 'the last rank arrived' and the ranks went on. Program: learner/p08 (dist.barrier() in
Dataset.__getitem__, DataLoader(num_workers=1)), under bl.run(init=False), deadline 8 s. Each rank's main thread
waits in the DataLoader (`for batch in loader`, line 19); its worker process is in dist.barrier() for good.
Checked on one run: the diagnosis ('outside any collective', 'no collective calls were recorded') and the
timeline (Agg) agree on whether the ranks were in a barrier, and the figure draws no release for a barrier that
no rank ever left."""

import json
import sys

from _h import LEARNER, PY, Workdir, run, verdict

CODE = r"""
import importlib.util, sys, json
import matplotlib
matplotlib.use("Agg")
from matplotlib.text import Text
import barrierlab as bl
spec = importlib.util.spec_from_file_location("learner_prog", sys.argv[1])
mod = importlib.util.module_from_spec(spec); sys.modules["learner_prog"] = mod; spec.loader.exec_module(mod)
def entry(rank):
    return mod.main()
run = bl.run(entry, 4, init=False, timeout=3, deadline=8, live=False)
fig = run.timeline()
fig.savefig(sys.argv[2], dpi=70)
w = run.waits()
texts = [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]
print(json.dumps({"repr": repr(run).splitlines()[:5], "diag": str(run.diagnosis).splitlines()[:2],
                  "ledger": run.ledger().splitlines()[:2], "releases": [str(r) for r in w.releases],
                  "texts": texts}))
"""
broken = []
with Workdir() as wd:
    rc, out, err = run(
        [PY, "-c", CODE, str(LEARNER / "p08_barrier_in_dataloader_worker.py"), f"{wd}/t.png"], cwd=wd, timeout=100
    )
if rc != 0:
    print(rc, out[-3000:], err[-3000:])
    sys.exit(2)
d = json.loads(out.strip().splitlines()[-1])
print("\n".join(d["repr"]))
print("diagnosis:", d["diag"][0][:250])
print("ledger:", d["ledger"])
print("releases (run.waits()):", d["releases"])
stuck_texts = [t for t in d["texts"] if "stuck in barrier" in t]
print("figure:", stuck_texts[:4], [t for t in d["texts"] if t.startswith("barrier #")])
if stuck_texts and "outside any collective" in d["diag"][0]:
    broken.append(
        f"the figure says {stuck_texts[0]!r} on every rank; the diagnosis of the same run says "
        f"'outside any collective' and the ledger '{d['ledger'][0]}'"
    )
if d["releases"] and stuck_texts and all("stopped at deadline" in ln for ln in d["repr"][1:]):
    broken.append(f"a release is drawn ({d['releases'][0][:120]}) for barrier #1, which no rank ever left")
verdict(broken)
