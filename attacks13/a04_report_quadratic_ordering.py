"""Promise 2 (no bloat from what ranks recorded) for `barrierlab report FOLDER`.

A well-formed record folder of a torchrun job of 512 ranks that each made 150 all_reduces (about 20 MB of records,
every rank finished, no file accesses at all) makes `barrierlab report` take minutes of CPU and 1.5+ GB of
memory: the diagnosis of a finished run (diagnose.rule_ok) always builds the ordering model
(ordering.Order._collectives), which adds one edge per pair of ranks per collective (world_size**2 per call),
even though the run has no file access to check for races. Memory grows with world_size**2 * calls.
"""

import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import SRC, TempDir  # noqa: E402

N, K = 512, 150
LIMIT_MB = 1024
LIMIT_S = 90

with TempDir() as d:
    folder = os.path.join(d, "records")
    os.mkdir(folder, 0o700)
    for r in range(N):
        lines = [json.dumps({"meta": "start", "rank": r, "t0": 100.0, "pid": 1000 + r, "wall": 1796398401.0})]
        t = 100.01
        for k in range(1, K + 1):
            lines.append(
                json.dumps(
                    {
                        "id": k,
                        "kind": "collective",
                        "name": "all_reduce",
                        "t": t,
                        "seq": k,
                        "pos": k,
                        "file": "/nonexistent/train.py",
                        "line": 24,
                        "func": "main",
                        "timeout": 10.0,
                        "sizes": [[4]],
                        "dtypes": ["torch.float32"],
                    }
                )
            )
            t += 0.001
            lines.append(json.dumps({"id": k, "end": t}))
            t += 0.001
        with open(os.path.join(folder, f"rank{r}.events"), "w") as f:
            f.write("\n".join(lines) + "\n")
        outcome = {
            "rank": r,
            "world_size": N,
            "status": "finished",
            "pid": 1000 + r,
            "t_start": 100.005,
            "t_end": t,
            "clock": 1796398301.0,
            "exit_code": None,
            "error_type": "",
            "message": "",
            "traceback": "",
            "value_repr": "None",
            "send_error": "",
            "replaced_by": "",
            "blobs": [None, None],
        }
        with open(os.path.join(folder, f"rank{r}.outcome"), "w") as f:
            f.write(json.dumps(outcome) + "\n")
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    env = {**os.environ, "PYTHONPATH": SRC}
    start = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "barrierlab", "report", folder], capture_output=True, text=True, timeout=280, env=env
        )
        rc = p.returncode
        head = p.stdout[:200] + p.stdout[-300:]
    except subprocess.TimeoutExpired:
        rc, head = "timeout", ""
    took = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"records: {size / 1e6:.1f} MB; report exit {rc} in {took:.1f} s, peak RSS {peak_mb:.0f} MB")
    print(head)
    if rc == 0 and peak_mb < LIMIT_MB and took < LIMIT_S:
        print("held")
        sys.exit(0)
    print(f"BROKEN: report of {size / 1e6:.1f} MB of well-formed records needed {peak_mb:.0f} MB and {took:.0f} s")
    sys.exit(1)
