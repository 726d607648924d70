"""a16 — a careless rank prints a progress line in a tight loop: each of 2 ranks writes 1.5 GB to stdout (and
0.5 GB to stderr) before returning.
Promise: nothing a rank sends back (its output, stderr) can hurt the caller: the kernel keeps a bounded part of
the output; the call ends by its deadline; the run's folder (and the gigabytes in it) is removed after the call.
Held if the caller's peak memory grows by under 200 MB, the call ends by its deadline + 0.5 s and no run folder
of the caller is left 20 s after the call."""

from _h import driver, finish, result_line

CODE = r"""
import glob, json, os, resource, tempfile, time
import barrierlab as bl
def f():
    chunk = ("step 12 loss 0.123456\n" * 48000).encode()
    for _ in range(1500):
        os.write(1, chunk)
    for _ in range(500):
        os.write(2, chunk)
    return 1
bl.run(lambda: 1, 2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.monotonic()
r = bl.run(f, 2, timeout=20, deadline=40)
secs = time.monotonic() - t
text = repr(r) + r.outputs()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
left = []
for _ in range(40):
    left = glob.glob(os.path.join(tempfile.gettempdir(), f"barrierlab-*-{os.getpid()}-*"))
    if not left:
        break
    time.sleep(0.5)
print("RESULT " + json.dumps({"secs": secs, "status": [str(x.status) for x in r], "grew_mb": (after - before) / 1024,
                              "text_len": len(text), "left": left}))
"""
broken = []
d = driver(CODE, timeout=110)
res = result_line(d["out"])
if res is None:
    broken.append(f"no result (rc {d['rc']} after {d['seconds']:.0f} s): {d['err'][-600:]}")
else:
    print(res)
    if res["secs"] > 40.5:
        broken.append(f"the call took {res['secs']:.1f} s (deadline 40)")
    if res["grew_mb"] > 200:
        broken.append(f"the caller's peak memory grew by {res['grew_mb']:.0f} MB")
    if res["left"]:
        broken.append(f"run folders left 20 s after the call: {res['left']}")
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "a flood of output")
