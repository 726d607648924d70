"""Promise (the prompt's item 1; docs/lab.md): notebooks run as a learner runs them: every cell ends, and every
check gives a true verdict. Attack, in real Jupyter kernels (nbclient): notebook 00 run top to bottom twice in
one kernel; notebook 01 run once, then every code cell again in a shuffled order, then a learner cell that
shadows names the check modules use (WORLD, VOCAB, TIMEOUT, spans, verdict, random, shutil, tempfile), then the
exercise solved correctly and checked, then solved wrongly (a sleep) and checked. Held if no cell times out
(120 s each), the stored unsolved exercises get ✗ every time, the right answer ✓ and the sleep ✗."""

import copy
import os
import random
import sys
import time
import warnings

import nbformat
from _common import ROOT, env
from nbclient import NotebookClient

os.environ.update(env(BARRIERLAB_LIVE="0"))
warnings.filterwarnings("ignore")
problems = []


def run(cells, label):
    nb = nbformat.v4.new_notebook(cells=cells)
    for c in nb.cells:
        c.pop("id", None)
        c.outputs = []
    nb.nbformat_minor = 4
    t = time.monotonic()
    try:
        NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": os.path.join(ROOT, "notebooks")}},
        ).execute()
    except Exception as e:  # a cell that did not end
        problems.append(f"{label}: {type(e).__name__}: {str(e)[:300]}")
    print(f"{label}: {len(cells)} cells in {time.monotonic() - t:.0f}s")
    return nb


def code_cells(name):
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def verdicts(cell):
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return [line for line in text.splitlines() if line.startswith(("✓", "✗"))]


# notebook 00, twice
c00 = code_cells("00_what_is_a_barrier.ipynb")
nb = run([copy.deepcopy(c) for c in c00 + c00], "00 twice")
seen = [v for c in nb.cells for v in verdicts(c)]
print("   verdicts:", [v[:90] for v in seen])
if len(seen) != 2 or any(not v.startswith("✗") for v in seen):
    problems.append(f"00 twice: the unsolved exercise's verdicts: {seen}")

# notebook 01, in order, shuffled, shadowed, solved
c01 = code_cells("01_barriers_at_initialization.ipynb")
order = list(range(len(c01)))
shuffled = random.Random(int(os.environ.get("A23_SEED", "7"))).sample(order, len(order))
SHADOW = (
    "WORLD = 2\nVOCAB = ['x']\nTIMEOUT = 0.001\nspans = None\nverdict = print\nrandom = None\n"
    "shutil = None\ntempfile = None\n"
)
SOLVED = """def build_vocab_then_read(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    dist.barrier()
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()
v = check_vocab(build_vocab_then_read)"""
SLEEP = SOLVED.replace("    dist.barrier()\n", "    time.sleep(0.6)\n")
cells = [copy.deepcopy(c01[i]) for i in order + shuffled] + [
    nbformat.v4.new_code_cell(s) for s in (SHADOW, SOLVED, SLEEP)
]
nb = run(cells, "01 in order, shuffled, shadowed, solved")
unsolved = [v for c in nb.cells[: 2 * len(order)] for v in verdicts(c)]
right, sleep = verdicts(nb.cells[-2]), verdicts(nb.cells[-1])
errors = [o for o in nb.cells[-2].outputs + nb.cells[-1].outputs if o.get("output_type") == "error"]
print(
    "   unsolved:",
    [v[:90] for v in unsolved],
    "\n   right:",
    [v[:120] for v in right],
    "\n   sleep:",
    [v[:120] for v in sleep],
)
if errors:
    problems.append(f"01 check cells raised: {[e['ename'] + ': ' + e['evalue'][:200] for e in errors]}")
if len(unsolved) != 2 or any(not v.startswith("✗") for v in unsolved):
    problems.append(f"01 unsolved verdicts: {unsolved}")
if right[:1] != [right[0]] or not right or not right[0].startswith("✓"):
    problems.append(f"01 right answer after shadowing: {right}")
if not sleep or not sleep[0].startswith("✗"):
    problems.append(f"01 sleep answer after shadowing: {sleep}")
print("\n".join(problems) or "held")
sys.exit(1 if problems else 0)
