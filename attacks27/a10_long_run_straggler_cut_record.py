"""Promise (long runs, records cut in the middle): the diagnosis, run.waits() and the timeline are true about what
the record holds and about what it does not. Program learner/p09: 2 ranks make 9,000 barriers (line 16); before
barrier #8501 rank 1 blocks for good (time.sleep at line 15); deadline 25 s. Each rank's record is cut in the
middle (about 3,500 events not kept). The same program with 20 barriers, stopping before #11, is diagnosed
"rank 1 had not reached call #11 (barrier) yet ...". Checks: the long run's diagnosis explains the run (not "could
not be explained") and does not count the calls kept as the calls made ("after 4997 collective calls" while the
record's last barrier is #8501); the timeline and run.waits() say that part of the record was not read (the
dropped middle, ~2-5 s, is otherwise drawn and counted as 'running your function')."""

import os
import sys

import matplotlib

matplotlib.use("Agg")
from _h import LEARNER, SRC, Workdir, verdict  # noqa: E402

sys.path.insert(0, str(SRC))
from barrierlab import script  # noqa: E402

broken = []
with Workdir() as wd:
    os.chdir(wd)
    run = script.run_script(str(LEARNER / "p09_long_then_hang.py"), 2, ["9000", "8500"], timeout=30, deadline=25)
    os.chdir("/")
print(repr(run))
diag = str(run.diagnosis)
print(diag[:900])
seqs = [max((e.seq or 0) for e in r.events if e.kind == "collective") for r in run.ranks]
print("highest call number in each rank's record:", seqs)
w = run.waits()
print(w.summary())
fig = run.timeline()
if os.environ.get("A27_PNG"):
    fig.savefig(os.environ["A27_PNG"])
texts = " | ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip())
print("figure texts:", texts[:700])
if "could not be explained" in diag:
    broken.append("diagnosis: 'The run could not be explained from its records.' (20-barrier version: explained)")
import re  # noqa: E402

for m in re.finditer(r"rank (\d) was stopped at the deadline after (\d+) collective calls", diag):
    r, n = int(m.group(1)), int(m.group(2))
    if n < seqs[r] - 1:
        broken.append(
            f"diagnosis: 'rank {r} was stopped at the deadline after {n} collective calls'; its record holds call #{seqs[r]}"
        )
said_cut = any(k in texts for k in ("not kept", "dropped", "cut", "not read"))
if not said_cut:
    broken.append(
        "timeline: nothing says the middle of the records (3,500 events per rank) was not read; it is drawn as 'running your function'"
    )
if not any(k in w.summary() for k in ("not kept", "dropped", "cut", "not read")):
    broken.append(f"run.waits(): '{w.summary()}' from the kept events only, without saying so")
verdict(broken)
