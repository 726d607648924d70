"""Promise (docs/torchrun.md): a node that dies (its torchrun agent and workers SIGKILLed mid-loop) - the report of
the surviving node's folder and of both folders merged must be bounded, name the dead node's ranks as the ones
that stopped (killed / no outcome), not as finished or as having 'raised', and name the surviving ranks' failing
line (the learner's all_reduce), without claiming what the files do not show."""

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import Verdict, merge, report, two_nodes  # noqa: E402

MODULE = """\
import time
import torch
import torch.distributed as dist
from barrierlab.scenarios import torchrun_main


def scenario(steps=2000):
    t = torch.ones(4)
    for step in range(steps):
        time.sleep(0.05)
        dist.all_reduce(t)  # LOOP
    return float(t[0])


if __name__ == "__main__":
    torchrun_main(scenario)
"""
LOOP = MODULE.splitlines().index("        dist.all_reduce(t)  # LOOP") + 1

v = Verdict()
tmp = Path(tempfile.mkdtemp(prefix="a24a04-"))
try:
    (tmp / "mod").mkdir()
    (tmp / "mod" / "node_dies.py").write_text(MODULE)
    folders = [tmp / "node0", tmp / "node1"]

    seen = []

    def node1_running():  # 3 s after node 1's last rank began recording: well inside the 2000-step loop
        if not seen and (folders[1] / "rank3.events").exists():
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] > 3

    res = two_nodes(["-m", "node_dies"], folders, timeout=35, kill=(1, node1_running), pythonpath_extra=tmp / "mod")
    rc0, out0, err0 = res[0]
    print(f"--- node 0 torchrun exit {rc0}; barrierlab lines:")
    print(
        "\n".join(
            [l for l in err0.splitlines() if not l.startswith(("W1", "E1", "frame #", "[W", "  File", "    "))][-40:]
        )
    )
    print("node1 folder:", sorted(p.name for p in folders[1].iterdir()))
    v.check(rc0 not in (0, None), f"node 0 exit {rc0}")
    rc, out, err = report(folders[0])
    print(f"--- report node0 (exit {rc}, {len(out)} chars)\n{out[:3000]}{err[-300:]}")
    head = out.split("What to do")[0]
    v.check(rc == 1, f"node-0 report exit {rc}")
    v.check(f"line {LOOP}" in out, f"node-0 report does not name line {LOOP}")
    v.check("All 4" not in out, "node-0 report claims all 4 ranks")
    m = merge(folders, tmp / "all")
    rc, out, err = report(m)
    print(f"--- merged report (exit {rc}, {len(out)} chars)\n{out[:3000]}{err[-300:]}")
    v.check(rc == 1, f"merged exit {rc}")
    first = out.split("\n\n")[0]
    for r in (2, 3):
        line = [l for l in first.splitlines() if l.strip().startswith(f"rank {r}:")]
        v.check(
            line and "finished" not in line[0] and "raised" not in line[0],
            f"merged: dead node's rank {r} shown as {line}",
        )
    v.check(f"line {LOOP}" in out or f":{LOOP}" in out, f"merged report does not name line {LOOP}")
    v.check(len(out) < 20000, f"merged report {len(out)} chars")
    headline = out.split("\n\n")[1].splitlines()[0] if out.count("\n\n") else out
    v.check(
        "different number of times" not in headline and "pad the uneven data" not in out,
        f"merged diagnosis blames an uneven loop for ranks that ended without a report (a dead node): {headline!r}",
    )
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
