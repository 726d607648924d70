"""Promise 5: every parameter validated first, with a message naming it.

run.timeline() checks `since` (a word), `waits_inside` (a str) and `handoffs` by name, but:
- since=float("nan") fails inside matplotlib: "ValueError: Axis limits cannot be NaN or Inf";
- waits_inside=5 fails with "TypeError: 'int' object is not iterable";
- ax=5 fails with "AttributeError: 'int' object has no attribute 'get_figure'";
none of them names the parameter. (since=-5 and since=1e300 are accepted and drawn.)
"""

import sys

import matplotlib

matplotlib.use("Agg")
import torch.distributed as dist  # noqa: E402

import barrierlab as bl  # noqa: E402


def step():
    dist.barrier()
    return dist.get_rank()


if __name__ == "__main__":
    run = bl.run(step, world_size=2, live=False)
    cases = {"since": float("nan"), "waits_inside": 5, "ax": 5}
    unnamed = []
    for name, value in cases.items():
        try:
            run.timeline(**{name: value})
            print(f"timeline({name}={value!r}): accepted")
            unnamed.append(name)
        except Exception as error:  # noqa: BLE001
            text = f"{type(error).__name__}: {error}"
            print(f"timeline({name}={value!r}): {text}")
            if name not in str(error) or not isinstance(error, (TypeError, ValueError)):
                unnamed.append(name)
    if unnamed:
        print("BROKEN: bad values not refused with a message naming the parameter:", unnamed)
        sys.exit(1)
    print("held")
