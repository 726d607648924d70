"""a09: `barrierlab lint` flags a barrier called in EVERY case of a `match rank:` whose last case is the wildcard
`case _:` (or a capture `case other:`), which every rank reaches one way or the other; the same code written as
if/else passes.
Promise 4: no false mismatch on correct code.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import subprocess
import sys
import tempfile

IF_ELSE = """\
import torch.distributed as dist

def sync(rank):
    if rank == 0:
        dist.barrier()
    else:
        dist.barrier()
"""

MATCH = """\
import torch.distributed as dist

def sync(rank):
    match rank:
        case 0:
            dist.barrier()
        case _:
            dist.barrier()
"""


def lint(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", "lint", path],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a09-")
    try:
        code_if, out_if = lint(folder, "if_else.py", IF_ELSE)
        code_match, out_match = lint(folder, "match.py", MATCH)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"if/else: exit {code_if}\n{out_if.strip()[:300]}\n")
    print(f"match:   exit {code_match}\n{out_match.strip()[:600]}")
    if code_if == 0 and code_match != 0:
        print("BROKEN: lint flags the match version's barriers, which every rank calls")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
