"""a15 — the Python lint API (`barrierlab.lint.lint`, `lint_function`, `lint_source`) given odd objects: a lambda, a
function made by exec (no source), a builtin, a partial, a module without a file (sys), a class made by type(),
an object whose __wrapped__ is itself, an object whose __wrapped__ raises, bytes, a FIFO path, a generator,
a bound method of a builtin, lint_source of bytes/None/a huge string.
Promise (prompt, reference): bad arguments are refused first with a clear error (TypeError/ValueError, LintError
is a ValueError); never a hang, never an internal error (AttributeError, RecursionError, IndexError...)."""

from _h import driver, finish, result_line

CODE = r"""
import functools, json, os, sys, types
from barrierlab import lint as L
ns = {}
exec("import torch.distributed as dist\ndef made(rank):\n    if rank == 0:\n        dist.barrier()\n", ns)
class SelfWrapped:
    pass
sw = SelfWrapped(); sw.__wrapped__ = sw
class BadWrapped:
    @property
    def __wrapped__(self):
        raise RuntimeError("no")
os.mkfifo(WORK + "/fifo.py")
lam = lambda rank: None
def g():
    yield 1
cases = {
    "lambda": lambda: L.lint(lam),
    "exec'd function": lambda: L.lint(ns["made"]),
    "builtin print": lambda: L.lint(print),
    "partial": lambda: L.lint(functools.partial(g)),
    "module sys": lambda: L.lint(sys),
    "class by type()": lambda: L.lint(type("T", (), {})),
    "__wrapped__ is itself": lambda: L.lint(sw),
    "__wrapped__ raises": lambda: L.lint(BadWrapped()),
    "bytes path": lambda: L.lint(b"/etc/passwd"),
    "FIFO path": lambda: L.lint(WORK + "/fifo.py"),
    "generator object": lambda: L.lint(g()),
    "builtin method": lambda: L.lint([].append),
    "lint_function(None)": lambda: L.lint_function(None),
    "lint_function(3)": lambda: L.lint_function(3),
    "lint_source(bytes)": lambda: L.lint_source(b"x = 1"),
    "lint_source(None)": lambda: L.lint_source(None),
    "lint_source(2 MiB)": lambda: L.lint_source("x = 1\n" * 350000),
    "lint_source(syntax error)": lambda: L.lint_source("def (:"),
    "lint_source(NUL)": lambda: L.lint_source("x = \0"),
    "report(None)": lambda: L.report(None),
    "report([1, 2])": lambda: L.report([1, 2]),
}
out = {}
for name, call in cases.items():
    try:
        r = call()
        out[name] = ["ok", str(r)[:150]]
    except BaseException as e:
        out[name] = [type(e).__name__, str(e)[:200], isinstance(e, (TypeError, ValueError))]
    print(name, out[name], flush=True)
print("RESULT " + json.dumps(out))
"""
broken = []
d = driver(CODE, timeout=100)
res = result_line(d["out"])
if res is None:
    broken.append(f"no result (rc {d['rc']} after {d['seconds']:.0f} s): {d['out'][-800:]} {d['err'][-800:]}")
else:
    for name, r in res.items():
        print(f"{name}: {r}")
        if name == "__wrapped__ raises":  # the object's own property raising: the learner's error, shown as is
            continue
        if r[0] == "SyntaxError" and name.startswith("lint_source"):  # ast.parse's own, clear: accepted
            continue
        if r[0] != "ok" and not r[2]:
            broken.append(f"{name}: {r[0]}: {r[1]}")
        elif name in ("lint_source(bytes)", "lint_source(None)") and not any(w in r[1] for w in ("source", "must be")):
            broken.append(f"{name}: {r[0]} that names neither the parameter nor the type wanted: {r[1]!r}")
finish(broken, "the lint API on odd objects")
