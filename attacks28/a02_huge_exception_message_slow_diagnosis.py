"""a02 — an exception of the learner's own class whose message is large (its __str__ builds a 30 MB text, e.g.
the whole bad batch): the rank clips the text it reports, but the kernel calls str() again on every access and
runs tidy()'s four regular expressions over the whole text, once per rule.
Promise (reference): an exception with a huge message is reported clipped; nothing a rank sends back can hurt the
caller's process; a deadlock demo ends by itself within seconds. Measured: time of repr(run) and run.diagnosis.
Held if both together take under 10 s."""

import sys

from _h import driver, finish, result_line

N = int(sys.argv[1]) if len(sys.argv) > 1 else 30_000_000
CODE = r"""
import json, time, barrierlab as bl
class BadBatch(Exception):
    def __str__(self):
        return "bad batch: " + "x" * N
def f():
    raise BadBatch()
bl.run(lambda: 1, 2)
t = time.monotonic()
r = bl.run(f, 2, timeout=2, deadline=20)
t1 = time.monotonic()
s = repr(r); t2 = time.monotonic()
d = str(r.diagnosis); t3 = time.monotonic()
print("RESULT " + json.dumps({"run": t1 - t, "status": [str(x.status) for x in r], "repr": t2 - t1, "diag": t3 - t2,
                              "repr_len": len(s), "diag_head": d[:200]}))
"""
CODE = f"N = {N}\n" + CODE
d = driver(CODE, timeout=110)
res = result_line(d["out"])
broken = []
if res is None:
    broken.append(
        f"no result within {d['seconds']:.0f} s (rc {d['rc']}): reading the run did not end; {d['err'][-500:]}"
    )
else:
    print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()})
    if res["repr"] + res["diag"] > 10:
        broken.append(
            f"bl.run returned in {res['run']:.2f} s, then repr(run) took {res['repr']:.1f} s and "
            f"run.diagnosis {res['diag']:.1f} s for a {N:,}-character message"
        )
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "a learner's exception with a huge message")
