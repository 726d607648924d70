"""Promise 5: every parameter is validated first, with a message naming it. run.order(backend=...) refuses a backend
other than 'gloo'/'nccl' ("backend must be 'gloo' or 'nccl'"); run.races(backend=...) refuses it only when two ranks
touched a file: otherwise a typo ('NCCL', 'mpi', 5) returns [] ("no race") as if the question had been answered.
Exit 0 if races() refuses every bad backend on a run without file accesses, 1 if it answers [] instead."""

import sys

import barrierlab as bl


def main() -> int:
    run = bl.run(lambda: 1, 2, live=False)
    broken = False
    for backend in ("NCCL", "mpi", 5, None):
        try:
            run.order(backend)
            order = "accepted"
        except (TypeError, ValueError) as error:
            order = f"{type(error).__name__}: {error}"
        try:
            answer = f"returned {run.races(backend)!r}"
            broken = True
        except (TypeError, ValueError) as error:
            answer = f"{type(error).__name__}: {error}"
        print(f"backend={backend!r}: order() -> {order}; races() -> {answer}")
    if broken:
        print("BROKEN: run.races() answers for a backend it does not know instead of refusing it")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
