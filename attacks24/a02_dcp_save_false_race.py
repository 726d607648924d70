"""Promise (reference "File races": a race is a use of a file another rank changed that no call ordered; DCP's
save/load are collectives of the whole group, recorded at the learner's call). The canonical DCP pattern - every
rank calls dcp.save then dcp.load on one checkpoint_id - is correct code. Run (1) as a script with `barrierlab run
script.py -n 2 --races` (torch.distributed.checkpoint imported at the top, as scripts do) and (2) as the lesson's
own scenario under torchrun on two 'nodes' (checkpoint_dcp_save, notebook 02), reported with --races: neither may
report a race, and the report of the correct torchrun job must exit 0. (bl.run of the same scenario reports none.)"""

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, Verdict, env, merge, report, run, two_nodes  # noqa: E402

SCRIPT = """\
import os, sys
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def main():
    dist.init_process_group("gloo")
    ckpt = os.path.join(sys.argv[1], "ckpt")
    model = torch.nn.Linear(4, 2)
    dcp.save({"model": model.state_dict()}, checkpoint_id=ckpt)
    restored = {"model": torch.nn.Linear(4, 2).state_dict()}
    dcp.load(restored, checkpoint_id=ckpt)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""

v = Verdict()
tmp = Path(tempfile.mkdtemp(prefix="a24a02-"))
try:
    (tmp / "train.py").write_text(SCRIPT)
    (tmp / "out").mkdir()
    rc, out, err = run(
        [PY, "-m", "barrierlab", "run", str(tmp / "train.py"), "-n", "2", "--races", "--", str(tmp / "out")],
        timeout=100,
        env=env(BARRIERLAB_LIVE=0),
        cwd=tmp,
    )
    races = [l for l in out.splitlines() if l.startswith("- rank")]
    print(f"--- barrierlab run train.py --races: exit {rc}")
    print("\n".join(l for l in out.splitlines() if "Races" in l or l.startswith("- rank"))[:2000])
    v.check(
        rc == 0 and not races, f"script: exit {rc}, {len(races)} race(s) reported for every rank's dcp.save/dcp.load"
    )
    folders = [tmp / "node0", tmp / "node1"]
    res = two_nodes(
        ["-m", "barrierlab.scenarios.checkpoint_dcp_save", f"directory='{tmp}/ck'", "late_rank=3"], folders, timeout=60
    )
    print("torchrun exits:", [r[0] for r in res])
    m = merge(folders, tmp / "all")
    rc, out, err = report(m, "--races")
    print(f"--- merged report --races: exit {rc}\n{out[:1400]}")
    v.check(rc == 0, f"torchrun checkpoint_dcp_save (the lesson's correct DCP scenario): report exit {rc}")
    v.check("raced" not in out, "torchrun checkpoint_dcp_save: report says file accesses raced")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
