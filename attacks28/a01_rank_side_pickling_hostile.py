"""a01 — what a rank returns or raises is pickled IN THE RANK: a __reduce__ that hangs, raises SystemExit /
KeyboardInterrupt / a BaseException subclass, calls os._exit(0), or starts a detached daemon; an exception whose
__str__/__repr__ hang or whose causes form a cycle; a giant traceback.
Promise (reference, bl.run): nothing a rank sends back can make bl.run raise; every call ends by its deadline
(+ about 0.5 s); nothing the run started outlives it. Also: a rank whose value cannot be sent is not 'finished'
with a value it never sent."""

import sys

from _h import driver, finish, result_line

CODE = r"""
import json, os, subprocess, sys, time, traceback
import barrierlab as bl

class HangReduce:
    def __reduce__(self):
        while True: time.sleep(0.05)

class SysExitReduce:
    def __reduce__(self):
        raise SystemExit(0)

class KbdReduce:
    def __reduce__(self):
        raise KeyboardInterrupt

class Odd(BaseException):
    pass

class OddReduce:
    def __reduce__(self):
        raise Odd("odd")

class ExitZeroReduce:
    def __reduce__(self):
        os._exit(0)

class DaemonReduce:
    def __reduce__(self):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", TOKEN + "-daemon"],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        return (int, (7,))

class StrHangs(Exception):
    def __str__(self):
        while True: time.sleep(0.05)
    __repr__ = __str__

class StrHugeErr(Exception):
    def __str__(self):
        return "x" * (300 << 20)

def ret(kind):
    def f():
        import torch.distributed as dist
        dist.barrier()
        return {"hang": HangReduce, "sysexit": SysExitReduce, "kbd": KbdReduce, "odd": OddReduce,
                "exit0": ExitZeroReduce, "daemon": DaemonReduce}[kind]()
    return f

def raise_strhang():
    raise StrHangs("boom")

def raise_strhuge():
    raise StrHugeErr("boom")

def raise_cycle():
    a = ValueError("a"); b = KeyError("b")
    a.__cause__ = b; b.__cause__ = a; a.__context__ = b; b.__context__ = a
    raise a

def raise_deep():
    def r(n):
        return r(n + 1)
    r(0)

def raise_base():
    raise Odd("a BaseException subclass")

def raise_kbd():
    raise KeyboardInterrupt("from the rank")

cases = [("ret-" + k, ret(k)) for k in ("hang", "sysexit", "kbd", "odd", "exit0", "daemon")]
cases += [("raise-strhang", raise_strhang), ("raise-cycle", raise_cycle),
          ("raise-deep", raise_deep), ("raise-base", raise_base), ("raise-kbd", raise_kbd)]
only = sys.argv[1:]
out = {}
bl.run(lambda: 1, 2)  # the warm process is up: the deadline counts from the ranks' start

for name, fn in cases:
    if only and name not in only:
        continue
    t0 = time.monotonic()
    try:
        run = bl.run(fn, 2, timeout=2, deadline=6)
        secs = time.monotonic() - t0
        try:
            text = repr(run)[:300]
            diag = str(run.diagnosis)[:300]
            st = [str(r.status) for r in run]
            vals = []
            for r in run:
                try:
                    vals.append(repr(r.value)[:80])
                except BaseException as e:
                    vals.append("value raised " + type(e).__name__)
            out[name] = {"ok": True, "secs": round(secs, 2), "status": st, "values": vals, "repr": text}
        except BaseException as e:
            out[name] = {"ok": False, "secs": round(secs, 2), "error": "reading the run raised " + type(e).__name__ + ": " + str(e)[:200]}
    except BaseException as e:
        out[name] = {"ok": False, "secs": round(time.monotonic() - t0, 2), "error": "bl.run raised " + type(e).__name__ + ": " + str(e)[:300]}
    print(name, out[name], flush=True)
print("RESULT " + json.dumps(out))
"""

broken = []
only = sys.argv[1:]
d = driver(CODE.replace("only = sys.argv[1:] ", f"only = {only!r}"), timeout=115, settle=2)
res = result_line(d["out"])
if res is None:
    broken.append(
        f"driver gave no result: rc={d['rc']} after {d['seconds']:.1f}s; stdout: {d['out'][-1500:]} stderr tail: {d['err'][-1500:]}"
    )
else:
    for name, r in res.items():
        print(name, r)
        if not r["ok"]:
            broken.append(f"{name}: {r['error']}")
            continue
        if r["secs"] > 6 + 1.0:  # deadline + 0.5 s promised; 0.5 s more for a loaded machine
            broken.append(f"{name}: bl.run took {r['secs']} s with deadline=6")
        if name in ("ret-hang", "ret-sysexit", "ret-kbd", "ret-odd", "ret-exit0") and "finished" in r["status"]:
            vals = r["values"]
            if any(s == "finished" and v in ("None",) for s, v in zip(r["status"], vals)):
                broken.append(
                    f"{name}: a rank whose value was never sent is 'finished' with value None: {r['status']} {vals}"
                )
if d["left"]:
    broken.append(f"processes left after the driver ended: {d['left']}")
finish(broken, "rank-side pickling of hostile values/exceptions")
