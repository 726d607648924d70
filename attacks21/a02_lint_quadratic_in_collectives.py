"""barrierlab lint's time grows with the SQUARE of the collective calls in one unit (a function, or a
notebook's/script's top level), not "about linearly with the code".

Promise (docs/reference.md, lint): "Its time grows about linearly with the code (benchmarks/lint_scale.py: 800
chained functions, 65 kB, 0.4 s of CPU) ... at the bound, a notebook whose every third line is a finding took
5.3 s of CPU". Here: a script whose top level is `dist.all_reduce(t)` / `print(t)` repeated (correct code, no
finding), at 500 and at 2,000 repetitions (14 kB and 56 kB, well under lint.MAX_CODE_CHARS = 1 MiB). Linear
growth would make the second cost ~4x the first; the profile puts the time in lint._assignments (called once per
collective, each scanning the whole unit).
"""

import os
import tempfile
import time

import _common  # noqa: F401

from barrierlab import lint

HEAD = "import torch\nimport torch.distributed as dist\n\nt = torch.ones(1)\n"
BODY = "dist.all_reduce(t)\nprint(t)\n"

cpu = {}
with tempfile.TemporaryDirectory(prefix="a21-a02-") as folder:
    for n in (500, 2000):
        path = os.path.join(folder, f"top_{n}.py")
        with open(path, "w") as f:
            f.write(HEAD + BODY * n)
        t = time.process_time()
        findings = lint.lint_file(path)
        cpu[n] = time.process_time() - t
        print(f"{n:>5} collectives, {os.path.getsize(path):>6} bytes: {cpu[n]:6.2f} s of CPU, {len(findings)} findings")

ratio = cpu[2000] / cpu[500]
print(f"4x the code cost {ratio:.1f}x the CPU (linear: about 4x)")
extrapolated = cpu[2000] * (lint.MAX_CODE_CHARS / len(HEAD + BODY * 2000)) ** 2
print(
    f"extrapolated to lint.MAX_CODE_CHARS ({lint.MAX_CODE_CHARS:,} characters) of the same code: about "
    f"{extrapolated / 60:.0f} minutes of CPU (the docs: 5.3 s at the bound)"
)
_common.finish(
    ratio > 8 or cpu[2000] > 5.3, f"lint time quadratic in collectives per unit (x{ratio:.1f} for 4x the code)"
)
