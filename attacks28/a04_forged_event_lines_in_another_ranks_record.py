"""a04 — rank 1 appends forged lines to rank 0's events file (valid JSON of the wrong shape, huge numbers,
NaN/Infinity, negative times, unknown kinds, ids that collide with real calls, 'end' before start, seq numbers of
2**80, a file event with a path of 100k characters, a collective naming a group of 10**6 ranks), then a group
that deadlocks or finishes. The kernel then reads every view of the run.
Promise: nothing a rank sends back (its events file) can make bl.run raise or hurt the caller; every view of the
run (repr, diagnosis, ledger, timeline, waits, races, order, summary, outputs) works on what it finds, within
seconds."""

from _h import driver, finish, result_line

CODE = r"""
import json, os, time, traceback
import barrierlab as bl

LINES = [
    '[1, 2, 3]', '"just a string"', 'null', '42', '{}', '{"id": null}', '{"id": "x", "kind": []}',
    '{"id": 9, "kind": "collective", "name": "barrier", "t": NaN, "seq": 1, "pos": 1}',
    '{"id": 10, "kind": "collective", "name": "barrier", "t": -1e308, "seq": -5, "pos": 0, "line": -3, "file": 7, "func": null}',
    '{"id": 11, "kind": "collective", "name": "barrier", "t": 1e308, "seq": 1208925819614629174706176, "pos": 1e400}',
    '{"id": 12, "kind": "nonsense", "name": "barrier", "t": 1.0}',
    '{"id": 1, "end": -99999999999}',
    '{"id": 2, "end": Infinity}',
    '{"id": 13, "kind": "collective", "name": "all_reduce", "t": 5.0, "seq": 2, "pos": 2, "sizes": [[1e18, -1]], "dtypes": [3], "timeout": -1}',
    '{"id": 14, "kind": "collective", "name": "broadcast", "t": 6.0, "seq": 3, "pos": 3, "src": 999999, "group": {"ranks": [0,1]}, "group_ranks": "all"}',
    '{"id": 15, "kind": "file", "name": "write", "t": 7.0, "end": 3.0, "path": "' + "p" * 100000 + '"}',
    '{"id": 16, "kind": "file", "name": "read", "t": 8.0, "end": 8.5, "path": 12}',
    '{"id": 17, "kind": "span", "name": "' + "s" * 5000 + '", "t": 0.5, "end": 1e300}',
    '{"meta": "start", "rank": 7, "t0": "yesterday", "pid": -1, "wall": NaN}',
    '{"meta": "joining", "t": -1}', '{"meta": "called", "t": 1e999}',
    '{"id": 18, "kind": "collective", "name": "new_group", "t": 9.0, "seq": 4, "pos": 4, "ranks": ' + json.dumps(list(range(10**5))) + '}',
    '{"id": 19, "kind": "p2p", "name": "send", "t": 10.0, "dst": -4, "tag": 1e30}',
    '{"id": 20, "kind": "collective", "name": "barrier", "t": 11.0, "seq": 5, "pos": 5, "file": "/dev/zero", "line": 1, "func": "f"}',
    '{"id": 21, "kind": "collective", "name": "barrier", "t": 12.0, "seq": 6, "pos": 6, "file": "/proc/self/mem", "line": 99999999999, "func": "f"}',
]

def forge(mode):
    def f():
        import torch.distributed as dist
        r = dist.get_rank()
        dist.barrier()
        d = os.readlink("/proc/self/fd/600")
        if r == 1:
            with open(f"{d}/rank0.events", "a") as fh:
                for line in LINES:
                    fh.write(line + "\n")
        dist.barrier()
        if mode == "hang" and r == 0:
            dist.barrier()  # rank 1 never comes
        return r
    return f

views = {
    "repr": lambda run: repr(run),
    "diagnosis": lambda run: str(run.diagnosis),
    "ledger": lambda run: run.ledger(),
    "summary": lambda run: run.summary(),
    "outputs": lambda run: run.outputs(),
    "waits": lambda run: repr(run.waits()),
    "races": lambda run: repr(run.races()),
    "order": lambda run: repr(run.order()),
    "stuck": lambda run: repr(run.stuck),
    "headline": lambda run: run.headline(),
    "timeline": lambda run: run.timeline().savefig(WORK + "/t.png"),
    "timeline_handoffs": lambda run: run.timeline(handoffs=True).savefig(WORK + "/t2.png"),
}
bl.run(lambda: 1, 2)
out = {}
for mode in ("finish", "hang"):
    t0 = time.monotonic()
    try:
        run = bl.run(forge(mode), 2, timeout=2, deadline=6)
    except BaseException as e:
        out[mode] = {"error": "bl.run raised " + type(e).__name__ + ": " + str(e)[:300]}
        continue
    rec = {"secs": round(time.monotonic() - t0, 2), "status": [str(r.status) for r in run], "views": {}}
    for name, view in views.items():
        t1 = time.monotonic()
        try:
            v = view(run)
            rec["views"][name] = ["ok", round(time.monotonic() - t1, 2), str(v)[:160]]
        except BaseException as e:
            rec["views"][name] = ["raised", round(time.monotonic() - t1, 2), type(e).__name__ + ": " + str(e)[:200],
                                  traceback.format_exc()[-600:]]
    out[mode] = rec
    print(mode, json.dumps(rec, indent=1)[:3000], flush=True)
print("RESULT " + json.dumps(out))
"""

d = driver(CODE, timeout=115)
res = result_line(d["out"])
broken = []
if res is None:
    broken.append(
        f"no result within {d['seconds']:.0f} s (rc {d['rc']}); stdout: {d['out'][-2500:]} stderr: {d['err'][-1500:]}"
    )
else:
    for mode, r in res.items():
        if "error" in r:
            broken.append(f"{mode}: {r['error']}")
            continue
        print(mode, "bl.run", r["secs"], "s", r["status"])
        if r["secs"] > 7.0:
            broken.append(f"{mode}: bl.run took {r['secs']} s, deadline 6")
        for name, v in r["views"].items():
            print(f"  {name}: {v[0]} in {v[1]} s: {v[2][:120]!r}")
            if v[0] != "ok":
                broken.append(f"{mode}: {name} raised {v[2]}\n{v[3]}")
            elif v[1] > 10:
                broken.append(f"{mode}: {name} took {v[1]} s")
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "forged lines in another rank's events file")
