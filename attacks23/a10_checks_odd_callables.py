"""Promise (the exercises: a check decides from what the run recorded, never from the code's text, and gives a
true verdict; bl.run: fn may be a closure or lambda; generator and async functions are refused with a hint).
Attack: notebook 01's right answer handed to check_vocab as a lambda, a functools.partial, a bound method, a
callable object, a staticmethod's function, a nested function closing over a tensor it changes; and as a
generator function, an async def and a partial of a generator function (each must be refused with the hint);
then the right answers of notebooks 04 and 06 (from tests/) as a partial and a bound method. Held if every
right answer passes and the three non-functions are refused naming what they are."""

import sys

from _common import ROOT, python

CODE = r"""
import functools, os, sys, time
import torch, torch.distributed as dist
import barrierlab as bl
from barrierlab.exercises.nb01 import check_vocab
from barrierlab.exercises import nb04, nb06
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_exercises_nb04 as t04, test_exercises_nb06 as t06

def correct(folder, build_seconds, extra=None):
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

class Trainer:
    def __init__(self, fn=correct): self.t, self.fn = torch.ones(1), fn
    def fix(self, *a, **k): return self.fn(*a, **k)
    def __call__(self, *a, **k): return self.fn(*a, **k)

def closing():
    t = torch.zeros(3)
    def fn(folder, build_seconds):
        t.add_(1)
        return correct(folder, build_seconds)
    return fn

def gen(folder, build_seconds):
    yield correct(folder, build_seconds)

async def adef(folder, build_seconds):
    return correct(folder, build_seconds)

problems = []
right = {"lambda": lambda f, s: correct(f, s), "partial": functools.partial(correct, extra=1),
         "bound method": Trainer().fix, "callable object": Trainer(), "staticmethod": staticmethod(correct).__func__,
         "closure over a tensor": closing()}
for name, fn in right.items():
    v = check_vocab(fn, quiet=True, seed=5)
    print(f"nb01 {name}: {v.message[:120]}")
    if not v.ok: problems.append(f"nb01 {name}: {v.message}")
for name, fn, word in [("generator", gen, "generator"), ("async def", adef, "async"), ("partial(generator)", functools.partial(gen), "generator")]:
    try:
        v = check_vocab(fn, quiet=True, seed=5)
        problems.append(f"nb01 {name} not refused: {v.message[:200]}")
    except TypeError as e:
        print(f"nb01 {name}: refused: {str(e)[:120]}")
        if word not in str(e): problems.append(f"nb01 {name}: refused without naming it: {e}")
for label, check, fn in [("nb04", lambda f: nb04.check(f, seed=2), t04.RIGHT[0]), ("nb06", nb06.check_share_vocab, t06.RIGHT[0])]:
    for name, w in [("partial", functools.partial(fn)), ("bound method", Trainer(fn).fix)]:
        v = check(w)
        print(f"{label} {name}: {str(v)[:120]}")
        if not v: problems.append(f"{label} {name}: {v}")
print("PROBLEMS", problems)
""".replace("ROOT", repr(ROOT))

rc, out, err = python(CODE, timeout=115, BARRIERLAB_LIVE="0")
print(out)
if "PROBLEMS" not in out:
    print(rc, err[-3000:])
sys.exit(0 if "PROBLEMS []" in out else 1)
