"""Promise (docs/lab.md: Binder gives 1 CPU and 2 GB; docs/performance.md: "every notebook under 45 s and 1 GiB";
README: a deadlock demo ends by itself within seconds). Notebooks 03 (deadlocks) and 08 (capstone: barrierlab
run of a DDP script) executed top to bottom with the project's own runner (scripts/run_notebooks.py) on a temp
copy of the tree, inside taskset -c 0 and a 2 GB memory cgroup (swap off): every cell must end (the runner's
180 s cell timeout is never hit, no cell errors), no OOM kill, and no process may be left once it exits."""

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, TREE, Limited, Verdict, env, run  # noqa: E402

v = Verdict()
names = sys.argv[1:] or ["03_deadlocks.ipynb", "08_capstone.ipynb"]
tmp = Path(tempfile.mkdtemp(prefix="a24a07-"))
try:
    copy = tmp / "tree"
    shutil.copytree(TREE, copy, ignore=shutil.ignore_patterns(".git", "attacks*", "__pycache__", ".venv"))
    for name in names:
        with Limited("a24a07") as lim:
            t = time.monotonic()
            rc, out, err = run(
                lim.prefix() + [PY, str(copy / "scripts" / "run_notebooks.py"), str(copy / "notebooks" / name)],
                timeout=110,
                env=env(PYTHONPATH=str(copy / "src")),
                cwd=copy,
            )
            took = time.monotonic() - t
            time.sleep(1.5)
            left = lim.procs()
            print(
                f"=== {name}: runner exit {rc} in {took:.1f} s; OOM kills {lim.oom_kills()}; left {left}\n{out[-600:]}"
                f"{err[-2500:] if rc else ''}"
            )
            v.check(rc == 0, f"{name}: runner exit {rc}")
            v.check(lim.oom_kills() == 0, f"{name}: {lim.oom_kills()} OOM kill(s) under 2 GB")
            v.check(not left, f"{name}: processes left: {left}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
