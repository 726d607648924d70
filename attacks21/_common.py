"""Shared helper of attacks21 repros: import barrierlab from this worktree, and end the warm process."""

import os
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
os.environ["PYTHONPATH"] = SRC + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
os.environ.setdefault("BARRIERLAB_LIVE", "0")


def finish(broken: bool, what: str) -> None:
    """Stop barrierlab's warm process (if this script started one), print the verdict and exit 1 if broken."""
    if "barrierlab.launch" in sys.modules:
        sys.modules["barrierlab.launch"].shutdown()
    print(("BROKEN: " if broken else "HELD: ") + what)
    sys.exit(1 if broken else 0)
