"""Promise (docs/reference.md `bl.run`: "fn may be defined in a notebook cell, in a module, or be a closure or
lambda"; the exercises: a check gives a verdict that is true and says what to fix). Attack: in a real Jupyter
kernel, notebook 01's exercise answered correctly (barrier after rank 0's build), the function decorated with
`@functools.cache` (a learner's edit: "build the vocabulary once"), then checked with check_vocab and run with
bl.run. Held if the check passes it, or refuses it saying why (the function cannot be loaded in the ranks);
broken if it says only that the run did not finish."""

import sys

import nbformat
from _common import env
from nbclient import NotebookClient

CELLS = [
    """import functools, os, time, tempfile
import torch.distributed as dist
import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab""",
    """@functools.cache
def build_vocab_then_read(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    dist.barrier()  # the fix: after the build, before the read
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()""",
    """v = check_vocab(build_vocab_then_read, quiet=True)
print("VERDICT", v.ok, v.message)""",
    """r = bl.run(build_vocab_then_read, 2, args=(tempfile.mkdtemp(), 0.1))
print("RUN", [str(x.status) for x in r], "|", r.diagnosis.headline, "|", r[0].error_message.splitlines()[-1:])""",
    """print("PLAIN", check_vocab(build_vocab_then_read.__wrapped__, quiet=True).ok)""",
]

import os

os.environ.update(env(BARRIERLAB_LIVE="0"))
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
NotebookClient(nb, timeout=100, kernel_name="python3", allow_errors=True).execute()
text = "\n".join(o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells for o in c.outputs)
print(text)
verdict = next((l for l in text.splitlines() if l.startswith("VERDICT")), "")
broken = verdict.startswith("VERDICT False") and not any(
    w in verdict for w in ("cache", "decorat", "Can't get attribute", "cannot be loaded", "cannot send", "setup")
)
print("BROKEN: a correct answer wrapped in functools.cache gets '✗ not yet' with no reason" if broken else "held")
sys.exit(1 if broken else 0)
