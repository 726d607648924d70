"""Promise 5 (clear errors for bad input, naming what is wrong): `barrierlab run SCENARIO -n 2 steps=2`.

`barrierlab run --help` shows `[options] [scenario] [key=value | -- ARGS ...]`, and the scenario takes `steps`:
`barrierlab run straggler steps=2 -n 2` runs. With the options first, as the usage line orders them,
`barrierlab run straggler -n 2 steps=2` stops with the top-level usage and "barrierlab: error: unrecognized
arguments: steps=2" (exit 2): a valid argument is called unrecognised (argparse does not collect the
`nargs="*"` positional after an option that follows the `nargs="?"` scenario; __main__.py's parser)."""

import os
import subprocess
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def barrierlab(*args):
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "barrierlab", *args], env=env, capture_output=True, text=True, timeout=200
    )


def main():
    before = barrierlab("run", "straggler", "steps=2", "delay=0.01", "-n", "2")
    after = barrierlab("run", "straggler", "-n", "2", "steps=2", "delay=0.01")
    print(f"run straggler steps=2 delay=0.01 -n 2 -> exit {before.returncode}")
    last = (after.stdout + after.stderr).strip().splitlines()[-1]
    print(f"run straggler -n 2 steps=2 delay=0.01 -> exit {after.returncode}: {last}")
    if before.returncode == 0 and after.returncode != 0 and "unrecognized arguments" in last:
        print("BROKEN: valid key=value arguments after the options are called unrecognized")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
