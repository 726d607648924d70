"""Shared helpers for attack26: run rank programs with bl.run from the tree, in a fresh temporary folder, and
compare what the ordering model says with what torch's semantics say (expected race or not)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(TREE / "src"))
os.environ.setdefault("BARRIERLAB_LIVE", "0")

import barrierlab as bl  # noqa: E402


def run_case(fn, world=4, timeout=5, **kw):
    """Run fn(folder) on `world` ranks in a fresh folder; returns (run, races, diagnosis text)."""
    folder = tempfile.mkdtemp(prefix="a26-")
    try:
        run = bl.run(fn, world_size=world, args=(folder,), timeout=timeout, **kw)
        races = run.races()
        try:
            diag = str(run.diagnosis)
        except Exception as e:  # noqa: BLE001
            diag = f"<diagnosis raised {type(e).__name__}: {e}>"
        return run, races, diag
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def judge(cases):
    """cases: list of (name, fn, expect_race, kwargs). Prints each, returns exit code (0 all agree)."""
    bad = 0
    for name, fn, expect, kw in cases:
        run, races, diag = run_case(fn, **kw)
        said = len(races) > 0
        diag_says = "race" in diag.lower() or "nothing orders" in diag.lower()
        agree = (said == expect) and run.ok
        status = "OK " if agree else "BAD"
        if not agree:
            bad += 1
        print(
            f"[{status}] {name}: expected race={expect}, races()={len(races)}, statuses={[str(s) for s in run.statuses]}, values={run.values}"
        )
        if not agree or os.environ.get("A26_VERBOSE"):
            import collections

            kinds = collections.Counter((os.path.basename(r.first.path), r.first.how, r.second.how) for r in races)
            print("    races by (path, first access, second access):", dict(kinds))
            for r in list(races)[:3]:
                print("    race:", str(r)[:600])
            print("    diagnosis:", diag[:900].replace("\n", "\n    "))
        elif said and not diag_says:
            print("    (races found but the diagnosis does not mention them)")
            print("    diagnosis:", diag[:500])
    bl.shutdown()
    print("BROKEN" if bad else "HELD", f"({bad} of {len(cases)} cases disagree)")
    return 1 if bad else 0


def check_cases(check, cases, **kw):
    """cases: (name, fn, expect_ok). Runs check(fn, quiet=True?) per case, prints its message, returns exit code.
    A wrong answer must get ✗ with a message; a right one ✓."""
    import time as _t

    bad = 0
    for name, fn, expect in cases:
        t0 = _t.monotonic()
        try:
            v = check(fn, **kw)
            ok, msg = bool(v), str(v)
        except Exception as e:  # noqa: BLE001
            ok, msg = None, f"check raised {type(e).__name__}: {e}"
        agree = ok is expect
        if not agree:
            bad += 1
        print(
            f"[{'OK ' if agree else 'BAD'}] {name}: expected {'✓' if expect else '✗'}, got {msg[:700]!r} ({_t.monotonic() - t0:.1f} s)"
        )
    bl.shutdown()
    print("BROKEN" if bad else "HELD", f"({bad} of {len(cases)} answers judged wrongly)")
    return 1 if bad else 0
