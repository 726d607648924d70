"""Promise 5: every parameter validated first. `env=` is checked for types, NUL, size and interfaces beyond loopback,
but a variable barrierlab itself sets for each rank is taken as given and wins over barrierlab's value:
- env={"RANK": "0", "LOCAL_RANK": "0"} (say, a notebook's os.environ copied after a single-process test) gives every
  rank RANK=0 while dist.get_rank() says otherwise: code that reads RANK (`if int(os.environ["RANK"]) == 0: save()`)
  runs rank 0's branch on every rank; torchrun always sets each worker's own;
- env={"BARRIERLAB_RUN_ID": ""} empties the run's marker: a rank may then start a barrierlab.run of its own (refused
  otherwise: "barrierlab.run was called inside a rank"), and docs/containment.md's sweep of exec'd programs by that
  marker no longer finds the run's processes.
Exit 0 if such env= values are refused (ValueError/TypeError naming env) or do not take effect, 1 if they do."""

import sys

import barrierlab as bl


def what_the_rank_sees():
    import os

    import torch.distributed as dist

    return dist.get_rank(), os.environ.get("RANK"), os.environ.get("LOCAL_RANK")


def start_a_run_inside():
    import barrierlab as inner

    try:
        return repr(inner.run(lambda: "inner", 1, live=False, timeout=5)).splitlines()[0]
    except RuntimeError as error:
        return f"refused: {str(error)[:60]}"


def main() -> int:
    broken = []
    try:
        run = bl.run(what_the_rank_sees, 2, env={"RANK": "0", "LOCAL_RANK": "0"}, live=False)
        print("env RANK=0:", run.values)
        if any(v and str(v[0]) != v[1] for v in run.values):
            broken.append("RANK differs from dist.get_rank()")
    except (TypeError, ValueError) as error:
        print("env RANK=0 refused:", error)
    try:
        run = bl.run(start_a_run_inside, 1, env={"BARRIERLAB_RUN_ID": ""}, live=False, timeout=10, deadline=40)
        print("env BARRIERLAB_RUN_ID='':", run.values)
        if run.values and str(run.values[0]).startswith("Run("):
            broken.append("a rank started a run of its own")
    except (TypeError, ValueError) as error:
        print("env BARRIERLAB_RUN_ID='' refused:", error)
    if broken:
        print("BROKEN: env= overrides what barrierlab sets per rank, unchecked: " + "; ".join(broken))
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
