"""a01: `barrierlab run -m pkg.train` imports the package `pkg` (its __init__.py) in the launching process.

Promises: "a program that passes under torchrun passes under barrierlab run and does the same there"
(docs/reference.md: "A module of a package runs as `python -m` (and `torchrun -m`) runs it"), and "the call returns
within its deadline, whatever the rank code did".

torchrun's agent never imports the module: only its workers do, each with RANK/LOCAL_RANK set. barrierlab's
check_module() calls importlib.util.find_spec("pkg.train"), which imports the parent package `pkg` in the
launcher, before any rank exists. So
  (1) a package whose __init__.py reads os.environ["LOCAL_RANK"] (a common `torch.cuda.set_device(LOCAL_RANK)`-style
      line) passes under torchrun and crashes `barrierlab run -m`;
  (2) a package whose __init__.py takes 12 s (loading a resource at import) makes `barrierlab run -m ... --deadline 3`
      take 12 s more than its deadline in the launcher, outside any deadline.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h

TRAIN = """
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
print("rank", dist.get_rank(), "done")
dist.destroy_process_group()
"""

# (1) __init__ reads LOCAL_RANK
files1 = {
    "pkg/__init__.py": "import os\nLOCAL_RANK = int(os.environ['LOCAL_RANK'])\n",
    "pkg/train.py": TRAIN,
}
tr = _h.run_driver(
    "",
    timeout=120,
    files=files1,
    argv=["/work/main/.venv/bin/torchrun", "--standalone", "--nproc-per-node", "2", "-m", "pkg.train"],
)
print("torchrun -m pkg.train (LOCAL_RANK read in pkg/__init__.py):", "rc", tr.rc, f"{tr.elapsed:.1f}s")
print("  ", tr.stdout.strip().replace("\n", " | ")[:300])
bl = _h.run_driver(
    "",
    timeout=120,
    files=files1,
    argv=[_h.PY, "-m", "barrierlab", "run", "-m", "pkg.train", "-n", "2", "--deadline", "20"],
)
print("barrierlab run -m pkg.train -n 2:", "rc", bl.rc, f"{bl.elapsed:.1f}s")
print("   stderr tail:", bl.stderr.strip().splitlines()[-3:] if bl.stderr.strip() else "")
print("   stdout head:", bl.stdout.strip().splitlines()[:2])
broken1 = tr.rc == 0 and bl.rc != 0

# (2) __init__ takes 12 s
files2 = {
    "pkg/__init__.py": "import time\ntime.sleep(12)  # e.g. loading a vocabulary or a config at import\n",
    "pkg/train.py": TRAIN,
}
bl2 = _h.run_driver(
    "",
    timeout=120,
    files=files2,
    argv=[_h.PY, "-m", "barrierlab", "run", "-m", "pkg.train", "-n", "2", "--timeout", "1", "--deadline", "3"],
)
print("barrierlab run -m pkg.train --deadline 3 (pkg/__init__ sleeps 12 s):", "rc", bl2.rc, f"{bl2.elapsed:.1f}s")
print("   stdout head:", bl2.stdout.strip().splitlines()[:3])
files3 = {"pkg/__init__.py": "", "pkg/train.py": "import time\ntime.sleep(12)\n" + TRAIN}
base = _h.run_driver(
    "",
    timeout=120,
    files=files3,
    argv=[_h.PY, "-m", "barrierlab", "run", "-m", "pkg.train", "-n", "2", "--timeout", "1", "--deadline", "3"],
)
print("baseline: the same 12 s sleep at the top of pkg/train.py instead:", "rc", base.rc, f"{base.elapsed:.1f}s")
left = tr.survivors + bl.survivors + bl2.survivors
print("survivors:", left, "cgroups left:", bl.cgroups + bl2.cgroups)
broken2 = bl2.elapsed > base.elapsed + 8  # the 12 s ran in the launcher, outside the run's deadline
_h.verdict(
    broken1 or broken2 or bool(left),
    f"(1) torchrun rc={tr.rc}, barrierlab run -m rc={bl.rc}; (2) deadline 3 s, command took {bl2.elapsed:.1f} s against {base.elapsed:.1f} s with the sleep in the module itself",
)
