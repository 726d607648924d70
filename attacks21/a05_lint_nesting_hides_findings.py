"""barrierlab lint gives up on a whole valid file ("nested too deeply for lint", exit 2) because of one long elif
chain or one long sum elsewhere in it, and so does not report the file's plain rank-0-only barrier.

Promise (docs/reference.md, lint): exit 2 is "a file it could not read (a FIFO, device or folder, over 64 MiB,
more than 1 Mi characters of code, an and/or or comparison chain of more than 1,000 operands
(lint.MAX_OPERANDS), not UTF-8 or its declared encoding, not Python or a notebook ...)". Here the file is 30 kB of
valid Python that CPython compiles (checked below) with no and/or or comparison chain over 1,000 operands: a
600-case elif dispatch (or a 600-term sum) in one function, and in another a barrier under `if rank == 0:`.
"""

import os
import subprocess
import sys
import tempfile

import _common

BUG = """

def save(model):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "model.pt")
        dist.barrier()  # only rank 0 gets here
"""


def elif_chain(n):
    cases = "".join(f"    elif name == 'op{i}':\n        return {i}\n" for i in range(1, n))
    return "def opcode(name):\n    if name == 'op0':\n        return 0\n" + cases + "    raise KeyError(name)\n"


def long_sum(n):
    return "def total(x):\n    return " + " + ".join(f"x[{i}]" for i in range(n)) + "\n"


broken = False
with tempfile.TemporaryDirectory(prefix="a21-a05-") as folder:
    for name, extra in (("elif600.py", elif_chain(600)), ("sum600.py", long_sum(600)), ("control.py", "")):
        source = "import torch\nimport torch.distributed as dist\n\n" + extra + BUG
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(source)
        compile(source, path, "exec")  # CPython accepts it
        done = subprocess.run(
            [sys.executable, "-m", "barrierlab", "lint", path],
            capture_output=True,
            text=True,
            timeout=100,
            env=os.environ,
        )
        found = "dist.barrier" in done.stdout
        print(
            f"{name}: {len(source)} chars, compiles; lint exit {done.returncode}; the rank-0-only barrier "
            f"{'reported' if found else 'NOT reported'}; {(done.stderr or done.stdout).strip().splitlines()[0][:150]}"
        )
        if name != "control.py" and not found:
            broken = True
_common.finish(broken, "one deep (valid) expression makes lint refuse the file and miss its rank-0-only barrier")
