"""Promise: the timeline and run.waits() are true about what each rank did, and agree with the diagnosis.
Programs: learner/p04 ("process"): each rank starts a multiprocessing.Process (fork, Linux's default) whose
target all-reduces a metric (line 12), and joins it (line 23); learner/p13: a fork DataLoader (num_workers=2,
persistent_workers=True) whose collate_fn all-reduces the batch's longest length (line 10), the rank iterating the
loader (line 19). The children's all_reduce never returns (their copy of the group has no gloo threads); each
rank's own main thread waits in p.join() / the loader's next(), in no collective at all. The diagnosis says so
("Meanwhile rank 0 was stopped at ...:23 ... waiting for what its child would send"). Checks (run via
barrierlab.script.run_script, figure on Agg, its texts read from the Figure): a rank's lane and run.waits() must
not say the rank itself waited in a collective for the whole run ('stuck in all_reduce #1', 'waited 100%')
without naming the child; the figures are saved as PNGs when A27_PNG names a folder (looked at by hand)."""

import os
import sys

import matplotlib

matplotlib.use("Agg")
from _h import LEARNER, SRC, Workdir, verdict  # noqa: E402

sys.path.insert(0, str(SRC))
import barrierlab  # noqa: E402
from barrierlab import script  # noqa: E402

assert barrierlab.__file__.startswith(str(SRC)), barrierlab.__file__
broken = []
for prog, argv, rank_line in (("p04_process_in_rank.py", ["process"], ":23"), ("p13_collate_all_reduce.py", [], ":19")):
    with Workdir() as wd:
        os.chdir(wd)
        run = script.run_script(str(LEARNER / prog), 2, argv, timeout=3, deadline=7)
        diag = str(run.diagnosis)
        w = run.waits()
        fig = run.timeline()
        if os.environ.get("A27_PNG"):
            fig.savefig(os.path.join(os.environ["A27_PNG"], prog.replace(".py", ".png")))
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()]
        os.chdir("/")
    print(f"[{prog}] {repr(run).splitlines()[1]}")
    print("  diagnosis:", diag.splitlines()[0][:300])
    print("  run.waits():", w.summary())
    print("  figure texts:", sorted({t for t in texts if "stuck" in t or "waited" in t}))
    said_rank_waits_elsewhere = rank_line in diag and "child" in diag
    lane_stuck = [t for t in texts if "stuck in all_reduce" in t]
    if said_rank_waits_elsewhere and lane_stuck and not any("child" in t or "worker" in t for t in texts):
        broken.append(
            f"{prog}: diagnosis: the ranks waited at line {rank_line[1:]} for a child; the figure says {lane_stuck[0]!r} on each rank's lane, nothing of a child process"
        )
    waited = [t for t in texts if t.startswith("waited") and "(100%)" in t]
    if said_rank_waits_elsewhere and waited:
        broken.append(
            f"{prog}: the figure says each rank {waited[0]!r} in a collective, while its own thread was at line {rank_line[1:]}"
        )
    if said_rank_waits_elsewhere and "100%" in w.summary() and "child" not in w.summary():
        broken.append(f"{prog}: run.waits(): {w.summary()}")
verdict(broken)
