"""a10 — `barrierlab lint` on a function that is one long if/elif chain (a generated dispatcher, a long config
switch): 250, 500 and 1,000 branches (9-38 kB), nothing rank-dependent in it.
Promise (reference): lint's time grows about linearly with the code (benchmarks/lint_scale.py: 800 chained
functions, 65 kB, 0.4 s of CPU). Held if 4x the branches takes under 8x the time (linear: 4x) and 1,000
branches take under 10 s."""

import os
import shutil
import tempfile

from _h import PY, finish, run

work = tempfile.mkdtemp(prefix="a28-elif-")
broken = []
times = {}
try:
    for n in (250, 500, 1000):
        path = os.path.join(work, f"dispatch_{n}.py")
        with open(path, "w") as f:
            f.write("import torch.distributed as dist\n\n\ndef opcode_name(v):\n    if v == 0:\n        return 'op0'\n")
            for i in range(1, n):
                f.write(f"    elif v == {i}:\n        return 'op{i}'\n")
            f.write("\n\ndist.barrier()\n")
        rc, out, err, secs = run([PY, "-m", "barrierlab", "lint", path], timeout=100, cwd=work)
        times[n] = secs
        print(f"{n} branches, {os.path.getsize(path):,} bytes: rc={rc} {secs:.1f} s  {out.strip()[-60:]!r}")
        if rc is None:
            broken.append(f"{n} branches: lint did not end within 100 s")
            break
    if 1000 in times and 250 in times:
        ratio = times[1000] / times[250]
        print(f"ratio 1000/250 branches: {ratio:.1f}x (linear: 4x)")
        if ratio > 8 or times[1000] > 10:
            broken.append(
                f"250 branches {times[250]:.1f} s, 500 {times[500]:.1f} s, 1000 {times[1000]:.1f} s "
                f"(x{ratio:.1f} for 4x the code)"
            )
finally:
    shutil.rmtree(work, ignore_errors=True)
finish(broken, "lint time on a long if/elif chain")
