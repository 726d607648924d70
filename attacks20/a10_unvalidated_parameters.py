"""Promise 5 (every parameter validated first, with a message naming it: TypeError for a wrong type, ValueError
for a wrong value): parameters of public functions that are taken as given, or fail with another error.

run.timeline(): `handoffs=1` is refused ("handoffs must be a bool"), but `show_releases=2`, `annotate=None`,
`title=5`, `ends="ab"` (a str as the per-rank end times), `ends=[]` (none for 2 ranks), `ends=[nan, nan]` are
drawn; `since=10**400` raises OverflowError ("int too large to convert to float") without naming since.
barrierlab.main_process_first(group=5) and (local=1) run the body (no group initialised: the checks come after
that early exit, if any); barrierlab.warm_up(wait="no") is taken as True; barrierlab.show(5) raises inspect's
TypeError, which does not name fn."""

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch.distributed as dist  # noqa: E402

import barrierlab as bl  # noqa: E402


def step():
    dist.barrier()


def _named(call, name):
    """None if ``call()`` raised a TypeError/ValueError naming ``name``; else what happened."""
    try:
        made = call()
    except (TypeError, ValueError) as error:
        return None if name in str(error) else f"{type(error).__name__}: {error} (does not name {name})"
    except Exception as error:  # noqa: BLE001 - what the repro reports
        return f"{type(error).__name__}: {error}"
    if isinstance(made, plt.Figure):
        plt.close(made)
        return "drawn"
    if hasattr(made, "__exit__"):
        try:
            made.__enter__()
            made.__exit__(None, None, None)
        except (TypeError, ValueError) as error:
            return None if name in str(error) else f"{type(error).__name__}: {error} (does not name {name})"
        return "the with-block ran"
    return f"returned {made!r}"[:120]


def main():
    run = bl.run(step, 2, live=False)
    cases = [
        ("run.timeline(show_releases=2)", lambda: run.timeline(show_releases=2), "show_releases"),
        ("run.timeline(annotate=None)", lambda: run.timeline(annotate=None), "annotate"),
        ("run.timeline(title=5)", lambda: run.timeline(title=5), "title"),
        ("run.timeline(ends='ab')", lambda: run.timeline(ends="ab"), "ends"),
        ("run.timeline(ends=[])", lambda: run.timeline(ends=[]), "ends"),
        ("run.timeline(ends=[nan, nan])", lambda: run.timeline(ends=[math.nan, math.nan]), "ends"),
        ("run.timeline(since=10**400)", lambda: run.timeline(since=10**400), "since"),
        ("main_process_first(group=5)", lambda: bl.main_process_first(group=5), "group"),
        ("main_process_first(local=1)", lambda: bl.main_process_first(local=1), "local"),
        ("warm_up(wait='no')", lambda: bl.warm_up(wait="no"), "wait"),
        ("show(5)", lambda: bl.show(5), "fn"),
    ]
    broken = []
    for label, call, name in cases:
        what = _named(call, name)
        print(f"{label:34s} {'refused, naming it' if what is None else what}")
        if what is not None:
            broken.append(label)
    if broken:
        print(f"BROKEN: {len(broken)} of {len(cases)} calls with a wrong parameter were not refused naming it")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("BARRIERLAB_LIVE", "0")
    sys.exit(main())
