"""Promise (docs/reference.md, lint): "Its time grows about linearly with the code (benchmarks/lint_scale.py: 800
chained functions, 65 kB, 0.4 s of CPU), so the code it analyses at once ... is bounded (lint.MAX_CODE_CHARS): at
the bound, a notebook whose every third line is a finding took 5.3 s of CPU"; the brief: lint takes its input as
untrusted.
Attack: two small files. (1) a rank dispatch, `if r == 0: ... elif r == 1: dist.barrier() ...` with 400 branches
(13.5 kB); (2) one expression `a.b.b.b...` 4,000 attributes deep (8 kB). Each linted alone, 60 s allowed.
Judged by the CPU time of each lint process (session 33: wall time judged a busy machine, at load 21 a lint of
0.7 s of CPU went over 10 s), killed at 60 s of wall time."""

import os
import resource
import shutil
import subprocess
import tempfile
import time

from _h import PY, SRC, verdict

folder = tempfile.mkdtemp(prefix="attack30-lint-")
results = []
try:
    files = {
        "dispatch400.py": "import torch.distributed as dist\nr = dist.get_rank()\nif r == 0:\n    pass\n"
        + "".join(f"elif r == {i}:\n    dist.barrier()\n" for i in range(1, 400)),
        "dispatch100.py": "import torch.distributed as dist\nr = dist.get_rank()\nif r == 0:\n    pass\n"
        + "".join(f"elif r == {i}:\n    dist.barrier()\n" for i in range(1, 100)),
        "dispatch200.py": "import torch.distributed as dist\nr = dist.get_rank()\nif r == 0:\n    pass\n"
        + "".join(f"elif r == {i}:\n    dist.barrier()\n" for i in range(1, 200)),
        "attr2000.py": "import torch.distributed as dist\nx = a" + ".b" * 2000 + "\nif x:\n    dist.barrier()\n",
        "attr4000.py": "import torch.distributed as dist\nx = a" + ".b" * 4000 + "\nif x:\n    dist.barrier()\n",
    }
    for name, text in files.items():
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(text)
        start, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(
            ["timeout", "-s", "KILL", "60", PY, "-m", "barrierlab", "lint", path],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=SRC),
        )
        took, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
        results.append((name, len(text), p.returncode, used))
        print(f"{name:16s} {len(text):7,d} bytes  exit {p.returncode:4d}  {used:6.1f} s of CPU  {took:6.1f} s")
finally:
    shutil.rmtree(folder, ignore_errors=True)
slow = [(n, s, rc, t) for n, s, rc, t in results if t > 10 or rc not in (0, 1, 2)]
verdict(
    bool(slow),
    "over 10 s of CPU or killed at 60 s: "
    + ", ".join(f"{n} ({s:,} bytes, {t:.0f} s of CPU, exit {rc})" for n, s, rc, t in slow),
)
