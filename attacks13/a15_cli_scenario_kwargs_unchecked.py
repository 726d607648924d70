"""Promise 5 and docs/reference.md: "Every argument is checked before anything starts: ... ends the command at
once with a one-line error and exit code 2."

- `barrierlab run straggler steps` (not key=value) ends with exit code 1, not 2 (torchrun.parse_kwargs raises
  SystemExit(message), which exits 1).
- `barrierlab run straggler bogus=1` (a keyword scenario() does not take) is not checked against the scenario's
  signature: the ranks are started, each raises "TypeError: scenario() got an unexpected keyword argument
  'bogus'", and the command prints a run, a diagnosis and a ledger and exits 1.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import barrierlab  # noqa: E402

broken = []
for extra in (["steps"], ["bogus=1"]):
    p = barrierlab("run", "straggler", *extra, "-n", "2", "--timeout", "2", "--deadline", "4")
    out = (p.stdout + p.stderr).strip()
    started = "Run(" in out
    print(f"run straggler {' '.join(extra)}: exit {p.returncode}, ranks started: {started}: {out.splitlines()[:2]}")
    if p.returncode != 2 or started:
        broken.append(extra[0])
if broken:
    print("BROKEN: bad scenario arguments not refused before anything starts with exit code 2:", broken)
    sys.exit(1)
print("held")
