"""barrierlab lint on hostile or unusual source. Promise (docs/reference.md, lint --help): it follows aliases,
functools.partial, lambdas, star imports, methods, decorators; exit 0 nothing found, 1 found, 2 a file it could
not read (one line on stderr each). Each case below is a one-function file with a barrier reached on rank 0 only
(expect 1), correct code (expect 0), or an unreadable file (expect 2 and one stderr line). Held if every case
gets its expected exit code, no traceback, within 60 s each."""

import json
import os
import subprocess
import sys
import tempfile

import _common

BUG = "    if dist.get_rank() == 0:\n        {call}\n"
HEAD = "import torch.distributed as dist\n\n"
CASES = {
    "alias.py": (
        1,
        "import torch.distributed as d\nf = d.barrier\n\ndef main():\n    if d.get_rank() == 0:\n        f()\n",
    ),
    "walrus.py": (1, HEAD + "def main():\n    if (r := dist.get_rank()) == 0:\n        dist.barrier()\n"),
    "match.py": (
        1,
        HEAD
        + "def main():\n    match dist.get_rank():\n        case 0:\n            dist.barrier()\n        case _:\n            pass\n",
    ),
    "async_def.py": (1, HEAD + "async def main():\n" + BUG.format(call="dist.barrier()")),
    "lambda.py": (1, HEAD + "sync = lambda: dist.barrier()\n\ndef main():\n" + BUG.format(call="sync()")),
    "star.py": (1, "from torch.distributed import *\n\ndef main():\n    if get_rank() == 0:\n        barrier()\n"),
    "ternary.py": (1, HEAD + "def main():\n    dist.barrier() if dist.get_rank() == 0 else None\n"),
    "and.py": (1, HEAD + "def main():\n    dist.get_rank() == 0 and dist.barrier()\n"),
    "method.py": (
        1,
        HEAD
        + "class T:\n    def sync(self):\n        dist.barrier()\n\n    def run(self):\n        if dist.get_rank() == 0:\n            self.sync()\n",
    ),
    "comprehension.py": (1, HEAD + "def main():\n    [dist.barrier() for _ in range(dist.get_rank())]\n"),
    "while.py": (
        1,
        HEAD + "def main():\n    i = 0\n    while i < dist.get_rank():\n        dist.barrier()\n        i += 1\n",
    ),
    "os_exit.py": (
        1,
        "import os\n" + HEAD + "def main():\n    if dist.get_rank() == 0:\n        os._exit(0)\n    dist.barrier()\n",
    ),
    "recursion.py": (
        1,
        HEAD
        + "def a(n):\n    if dist.get_rank() == 0:\n        b(n)\n\ndef b(n):\n    a(n - 1)\n    dist.barrier()\n\ndef c(n):\n    return c(n)\n",
    ),
    "correct.py": (
        0,
        HEAD
        + "def main(t):\n    if dist.get_rank() == 0:\n        print('hi')\n    dist.barrier()\n    for _ in range(3):\n        dist.all_reduce(t)\n",
    ),
    "bom_crlf.py": (1, "\ufeff" + (HEAD + "def main():\n" + BUG.format(call="dist.barrier()")).replace("\n", "\r\n")),
    "syntax.py": (2, HEAD + "def main(:\n    pass\n"),
}
BYTES = {
    "latin1.py": (
        1,
        b"# -*- coding: latin-1 -*-\n"
        + HEAD.encode()
        + b"# caf\xe9\ndef main():\n"
        + BUG.format(call="dist.barrier()").encode(),
    ),
    "not_utf8.py": (2, HEAD.encode() + b"# caf\xe9\n"),
    "nul.py": (2, HEAD.encode() + b"\x00\n"),
}
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s}
        for s in [
            "%matplotlib inline\n!pip list\nfiles = !ls\n",
            "%%bash\necho ((\n",
            "await asyncio.sleep(0)\n",
            HEAD + "def f():\n" + BUG.format(call="dist.barrier()"),
        ]
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}

wrong = []
with tempfile.TemporaryDirectory(prefix="a21-a08-") as d:
    for name, (_want, text) in CASES.items():
        with open(os.path.join(d, name), "w", newline="") as f:
            f.write(text)
    for name, (_want, data) in BYTES.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    with open(os.path.join(d, "magics.ipynb"), "w") as f:
        json.dump(NOTEBOOK, f)
    os.symlink("alias.py", os.path.join(d, "link.py"))
    os.symlink("nowhere.py", os.path.join(d, "dangling.py"))
    os.symlink("loop_b.py", os.path.join(d, "loop_a.py"))
    os.symlink("loop_a.py", os.path.join(d, "loop_b.py"))
    os.mkdir(os.path.join(d, "folder.py"))
    expected = {
        **{n: w for n, (w, _) in CASES.items()},
        **{n: w for n, (w, _) in BYTES.items()},
        "magics.ipynb": 1,
        "link.py": 1,
        "dangling.py": 2,
        "loop_a.py": 2,
        "folder.py": 2,
    }
    for name, want in expected.items():
        done = subprocess.run(
            [sys.executable, "-m", "barrierlab", "lint", os.path.join(d, name)],
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ,
        )
        ok = (
            done.returncode == want
            and "Traceback" not in done.stderr
            and (want != 2 or len(done.stderr.splitlines()) == 1)
        )
        first = (done.stderr.strip() or done.stdout.strip()).splitlines()[0][:110]
        print(f"{'ok ' if ok else 'BAD'} {name:16s} exit {done.returncode} (want {want}): {first}", flush=True)
        if not ok:
            wrong.append(name)
_common.finish(bool(wrong), f"unexpected: {wrong}" if wrong else f"{len(expected)} hostile inputs, each as expected")
