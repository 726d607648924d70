"""Promise (diagnosis of subgroup collectives: "A collective of a subgroup reached by only some of its members"):
new_subgroups(group_size=2), rank 3 skips its subgroup's first all_reduce and returns. Depending on timing rank 2
fails in gloo's lazy connect of the subgroup ("connectFullMesh failed") instead of in the all_reduce; the diagnosis
must still name rank 3 / the learner's all_reduce line, and never say "every rank made the same collective calls".
8 runs of 4 ranks."""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, Verdict, env, run  # noqa: E402

CASE = r"""
import json, torch, torch.distributed as dist, barrierlab as bl


def subgroup_skip():
    rank = dist.get_rank()
    mine, groups = dist.new_subgroups(group_size=2)
    t = torch.ones(1)
    if rank != 3:
        dist.all_reduce(t, group=mine)  # LINE 10
    return float(t)


out = []
for i in range(8):
    r = bl.run(subgroup_skip, 4, timeout=2, deadline=8)
    out.append(dict(errors=[x.message if hasattr(x, "message") else "" for x in r.ranks], repr=repr(r).splitlines()[3],
                    head=str(r.diagnosis).splitlines()[0]))
print("RESULT" + json.dumps(out))
"""

v = Verdict()
with tempfile.TemporaryDirectory() as d:
    (Path(d) / "case.py").write_text(CASE)
    rc, out, err = run([PY, str(Path(d) / "case.py")], timeout=110, env=env(BARRIERLAB_LIVE=0))
    if "RESULT" not in out:
        print(out[-1500:], err[-2500:])
        v.check(False, f"driver rc {rc}")
        v.exit()
    bad = 0
    for i, item in enumerate(json.loads(out.split("RESULT", 1)[1])):
        wrong = "every rank made the same collective calls" in item["head"] or "case.py:10" not in item["head"]
        bad += wrong
        print(f"run {i}: {'WRONG' if wrong else 'ok   '} {item['repr'].strip()[:110]} :: {item['head'][:230]}")
    v.check(bad == 0, f"{bad} of 8 runs: the diagnosis missed rank 3's skipped subgroup all_reduce")
v.exit()
