"""Promise (docs/torchrun.md): "A named folder holds one job: when a job starts, its rank 0 removes an earlier
job's rank files and diagnosis claim from it (and says so), so that running the same command twice, or with
another number of ranks, reports the last job alone", and "on node-local disks, copy the folders together first".
Two nodes, each with BARRIERLAB_RECORD_DIR on its own disk (same path name on real machines; two folders here).
Job A: 3 ranks per node, rank 4 raises mid-loop. Job B, same folders: 2 ranks per node, rank 3 raises.
After B, node 1's folder must hold job B's ranks only, B's failing rank on node 1 must print a diagnosis, and
the report of node 1's folder (and of the merged folders) must describe job B's 4 ranks, not A's ranks 4 and 5."""

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import Verdict, merge, report, two_nodes  # noqa: E402

v = Verdict()
tmp = Path(tempfile.mkdtemp(prefix="a24a05-"))
try:
    folders = [tmp / "node0-disk" / "records", tmp / "node1-disk" / "records"]
    a = two_nodes(["-m", "barrierlab.scenarios.exception_mid_loop", "bad_rank=4"], folders, nproc=3, timeout=40)
    print("job A exits:", [r[0] for r in a], "node1 folder:", sorted(p.name for p in folders[1].iterdir()))
    b = two_nodes(["-m", "barrierlab.scenarios.exception_mid_loop", "bad_rank=3"], folders, nproc=2, timeout=40)
    print("job B exits:", [r[0] for r in b])
    left = sorted(p.name for p in folders[1].iterdir())
    print("node1 folder after job B:", left)
    v.check(
        not any(n.startswith(("rank4.", "rank5.")) for n in left),
        f"node 1's folder still holds job A's ranks 4-5: {left}",
    )
    err1 = b[1][2]
    v.check(
        "diagnosis of the ranks recorded in" in err1,
        "job B's failing rank 3 on node 1 printed no diagnosis (node 1's folder still holds job A's diagnosis claim)",
    )
    rc, out, err = report(folders[1])
    print(f"--- report of node 1's folder after job B (exit {rc})\n{out[:1800]}")
    v.check(
        out.startswith("Run(4 ranks"),
        f"node-1 report: {out.splitlines()[0] if out else err[-300:]!r}, job B had 4 ranks",
    )
    m = merge(folders, tmp / "all")
    rc, out, err = report(m)
    print(f"--- merged report (exit {rc})\n{out[:1800]}")
    v.check(
        out.startswith("Run(4 ranks"),
        f"merged report: {out.splitlines()[0] if out else err[-300:]!r}, job B had 4 ranks",
    )
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
