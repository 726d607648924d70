"""Promise (docs/reference.md, "The call chain"): a diagnosis names where each rank made its call, on both sides
of a mismatch. Attack: two bugs at once, as in the capstone (two planted bugs): rank 1 returns early (no
collective), and rank 0 makes one extra barrier at its own line before the loop's barrier, which ranks 2 and 3
call at another line. Held if the diagnosis does not say that ranks 2 and 3 called the barrier at rank 0's
line (their record says the loop's line)."""

import sys

from _common import python

CODE = r"""
import torch.distributed as dist
import barrierlab as bl

def f():
    r = dist.get_rank()
    if r == 1:
        return r            # bug 1: rank 1 has nothing to do and leaves
    if r == 0:
        dist.barrier()      # bug 2: LINE_EXTRA, rank 0 only
    for _ in range(3):
        dist.barrier()      # LINE_LOOP, every rank that stayed
    return r

run = bl.run(f, 4, timeout=2, live=False)
print(run.diagnosis)
print(run.ledger())
print("SITES", {r.rank: [(e.name, e.line) for e in r.events if e.is_collective][:2] for r in run})
"""
rc, out, err = python(CODE)
print(out, err[-1500:] if rc else "")
head = out.splitlines()[0] if out else ""
extra_line = next((i + 1 for i, l in enumerate(CODE.splitlines()[1:]) if "LINE_EXTRA" in l), None)
wrong = (
    f"ranks 0, 2 and 3 called barrier #1 at <string>:{extra_line}" in out
    or "ranks 0, 2 and 3 called barrier #1" in head
)
print("BROKEN: the diagnosis puts ranks 2 and 3's first barrier at rank 0's extra line" if wrong else "held")
sys.exit(1 if wrong or rc else 0)
