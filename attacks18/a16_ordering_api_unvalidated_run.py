"""Promise 5: every parameter validated first, with a message naming it.

barrierlab.ordering's public functions -- races(run, backend), order(run, backend), lost_on_nccl(run) (imported by
notebooks 01 and 02) and Order(run, ...) -- take a Run. Given something else they fail deep inside with an
AttributeError/TypeError about `.ranks` or iteration, never naming the parameter (their `backend` and `formed`
are validated with a message).
Exits 0 when every bad `run` gets a TypeError/ValueError that names `run`, 1 otherwise.
"""

import sys

from barrierlab import ordering
from barrierlab.ordering import lost_on_nccl


def main() -> int:
    bad = []
    for label, call in (
        ("ordering.races(None)", lambda: ordering.races(None)),
        ("ordering.races([], 'gloo')", lambda: ordering.races([], "gloo")),
        ("ordering.order('a run')", lambda: ordering.order("a run")),
        ("lost_on_nccl(None)", lambda: lost_on_nccl(None)),
        ("ordering.Order(None)", lambda: ordering.Order(None)),
    ):
        try:
            call()
        except (TypeError, ValueError) as error:
            ok = "run" in str(error).split(" ")[0:3] or str(error).startswith("run")
            print(f"{label}: {type(error).__name__}: {error}")
            if not ok:
                bad.append(label)
        except Exception as error:  # noqa: BLE001
            print(f"{label}: {type(error).__name__}: {error}")
            bad.append(label)
        else:
            print(f"{label}: accepted")
            bad.append(label)
    if bad:
        print("BROKEN: no message naming `run` for", ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
