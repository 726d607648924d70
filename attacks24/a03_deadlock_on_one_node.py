"""Promise (docs/torchrun.md, reference "Under torchrun, a record folder per machine holds that machine's ranks
only"): a deadlock on node 1's ranks only (ranks 2 and 3 call one extra barrier at line EXTRA of the learner's
module; node 0's ranks finish after the common barrier). Node 1's folder alone must name ranks 2,3 and the
learner's extra-barrier line and must not claim ranks 0,1 made no call; node 0's folder alone must not invent a
failure of its own ranks; the merged folders must name ranks 2-3 as the ones stuck/failed at that line, ranks 0-1
as finished, and the report must be bounded."""

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import Verdict, merge, report, two_nodes  # noqa: E402

MODULE = """\
import os, time
import torch.distributed as dist
from barrierlab.scenarios import torchrun_main


def scenario():
    rank = dist.get_rank()
    dist.barrier()
    if os.environ["GROUP_RANK"] == "1":
        dist.barrier()  # EXTRA: only node 1's ranks
    else:
        time.sleep(6)
    return rank


if __name__ == "__main__":
    torchrun_main(scenario)
"""
EXTRA = MODULE.splitlines().index("        dist.barrier()  # EXTRA: only node 1's ranks") + 1

v = Verdict()
tmp = Path(tempfile.mkdtemp(prefix="a24a03-"))
try:
    (tmp / "mod").mkdir()
    (tmp / "mod" / "node_deadlock.py").write_text(MODULE)
    folders = [tmp / "node0", tmp / "node1"]
    import _common

    base_env = _common.env
    _common.env = lambda **kw: {**base_env(**kw), "PYTHONPATH": base_env()["PYTHONPATH"] + ":" + str(tmp / "mod")}
    res = two_nodes(
        ["-m", "node_deadlock"], folders, timeout=35
    )  # node 0's agent then waits torch's 300 s exit barrier: killed
    _common.env = base_env
    for node, (rc, out, err) in enumerate(res):
        print(f"--- node {node} torchrun exit {rc}; stderr (barrierlab lines):")
        print("\n".join([l for l in err.splitlines() if not l.startswith(("W1", "E1", "frame #", "[W"))][-40:]))
    v.check(res[1][0] not in (0, None), f"node 1 exit {res[1][0]}")
    rc, out1, err = report(folders[1])
    print(f"--- report node1 (exit {rc})\n{out1}{err[-300:]}")
    v.check(rc == 1, f"node-1 report exit {rc}")
    v.check(f"line {EXTRA}" in out1 or f":{EXTRA}" in out1, f"node-1 report does not name line {EXTRA}")
    v.check(
        "nothing of ranks 0 and 1" in out1 or "not recorded here" in out1,
        "node-1 report does not say ranks 0,1 are not here",
    )
    v.check(
        "ranks 0" not in out1.split("What to do")[0].replace("nothing of ranks 0 and 1", ""),
        "node-1 report mentions ranks 0.. beyond 'not here'",
    )
    rc, out0, err = report(folders[0])
    print(f"--- report node0 (exit {rc})\n{out0}{err[-300:]}")
    v.check("rank 0: finished" in out0 and "rank 1: finished" in out0, "node-0 report: its ranks not finished")
    v.check(
        "All 4 ranks finished" not in out0,
        "node-0 folder holds ranks 0-1 only, yet its report says 'All 4 ranks finished'",
    )
    v.check(
        "flight record on ranks 2 and 3" not in out0,
        "node-0 report says it could not read the flight record of ranks 2 and 3, which are not in it",
    )
    m = merge(folders, tmp / "all")
    rc, out, err = report(m)
    print(f"--- merged report (exit {rc})\n{out}{err[-300:]}")
    v.check(rc == 1, f"merged exit {rc}")
    head = out.split("What to do")[0]
    v.check(f"line {EXTRA}" in head or f":{EXTRA}" in head, f"merged report does not name line {EXTRA}")
    v.check("ranks 2" in head or "rank 2" in head, "merged report does not name rank 2")
    v.check(len(out) < 20000, f"merged report {len(out)} chars")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
