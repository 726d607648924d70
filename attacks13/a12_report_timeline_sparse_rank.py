"""Promise 2 (records are untrusted: must not hang or bloat) for `barrierlab report FOLDER --timeline`.

A folder holding only rank4095.events and rank4095.outcome (2.4 kB, one rank's real record renamed) makes the
run 4096 ranks wide (collect.from_records: world_size = highest rank found + 1, up to _files.MAX_RANKS = 4096).
Without --timeline the report takes ~1 s. With --timeline it drew 4096 lanes: a 1320 x 206,714-pixel figure
(plot._figure_and_axes: height 2.3 + 0.42 inch per rank, unbounded), 145 s and 1.35 GB of memory on this machine,
an 11 MB PNG. The figure's size is not bounded by anything the records are bounded by.
"""

import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import SRC, TempDir  # noqa: E402

LIMIT_S = 60
LIMIT_MB = 1024
RANK = 4095

with TempDir() as d:
    folder = os.path.join(d, "records")
    os.mkdir(folder, 0o700)
    t0 = 624.70
    lines = [{"meta": "start", "rank": RANK, "t0": t0, "pid": 18207, "wall": 1796398401.13}]
    for k in range(1, 4):
        lines += [
            {
                "id": 2 * k - 1,
                "kind": "compute",
                "name": "compute",
                "t": t0 + 0.2 * k,
                "file": "/x/s.py",
                "line": 21,
                "func": "scenario",
            },
            {"id": 2 * k - 1, "end": t0 + 0.2 * k + 0.1},
            {
                "id": 2 * k,
                "kind": "collective",
                "name": "barrier",
                "t": t0 + 0.2 * k + 0.1,
                "seq": k,
                "pos": k,
                "file": "/x/s.py",
                "line": 24,
                "func": "scenario",
                "timeout": 10.0,
            },
            {"id": 2 * k, "end": t0 + 0.2 * k + 0.11},
        ]
    with open(os.path.join(folder, f"rank{RANK}.events"), "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    outcome = {
        "rank": RANK,
        "world_size": RANK + 1,
        "status": "finished",
        "pid": 18207,
        "t_start": t0 + 0.01,
        "t_end": t0 + 0.8,
        "clock": 1796398401.13 - t0,
        "exit_code": None,
        "error_type": "",
        "message": "",
        "traceback": "",
        "value_repr": "None",
        "send_error": "",
        "replaced_by": "",
        "blobs": [None, None],
    }
    with open(os.path.join(folder, f"rank{RANK}.outcome"), "w") as f:
        f.write(json.dumps(outcome) + "\n")
    png = os.path.join(d, "t.png")
    env = {**os.environ, "PYTHONPATH": SRC}
    start = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "barrierlab", "report", folder, "--timeline", png],
            capture_output=True,
            text=True,
            timeout=280,
            env=env,
        )
        rc = p.returncode
        first = p.stdout.splitlines()[0] if p.stdout else p.stderr[-300:]
    except subprocess.TimeoutExpired:
        rc, first = "timeout", ""
    took = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    size = os.path.getsize(png) if os.path.exists(png) else 0
    print(f"{first}\nreport --timeline: exit {rc}, {took:.0f} s, peak RSS {peak:.0f} MB, png {size / 1e6:.1f} MB")
    if took < LIMIT_S and peak < LIMIT_MB:
        print("held")
        sys.exit(0)
    print("BROKEN: two small rank files made report --timeline take minutes and a GB (4096 lanes drawn)")
    sys.exit(1)
