"""Lint finds a barrier only rank 0 reaches (promise 4, for lint: a real one-sided barrier is reported). The same
code with `from torch.distributed import *` (which does export get_rank and barrier) is reported as clean.
Exit 0 if lint finds the one-sided barrier in both spellings, 1 if it misses it in the star-import one."""

import os
import subprocess
import sys
import tempfile

EXPLICIT = "from torch.distributed import barrier, get_rank, init_process_group\n"
STAR = "from torch.distributed import *\n"
BODY = """

def main():
    init_process_group("gloo")
    if get_rank() == 0:
        barrier()


if __name__ == "__main__":
    main()
"""


def lint(source: str) -> tuple[int, str]:
    fd, path = tempfile.mkstemp(suffix=".py", prefix="a14-a04-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        done = subprocess.run(
            [sys.executable, "-m", "barrierlab", "lint", path], capture_output=True, text=True, timeout=120
        )
        return done.returncode, done.stdout + done.stderr
    finally:
        os.unlink(path)


def main() -> int:
    import torch.distributed  # noqa: F401 - the star import really brings both names

    names = {}
    exec(STAR, names)
    print("star import exports barrier and get_rank:", "barrier" in names and "get_rank" in names)
    code_explicit, out_explicit = lint(EXPLICIT + BODY)
    code_star, out_star = lint(STAR + BODY)
    print(f"explicit import: exit {code_explicit}: {out_explicit.strip().splitlines()[0]}")
    print(f"star import:     exit {code_star}: {out_star.strip().splitlines()[0]}")
    if code_explicit == 1 and code_star != 1:
        print("BROKEN: lint misses the one-sided barrier when torch.distributed is star-imported")
        return 1
    return 0 if code_star == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
