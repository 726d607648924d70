"""a14 — each rank starts a thread that forks a child every 10 ms (a careless 'spawn a worker per item' loop;
each child sleeps), then the rank blocks until the deadline stops it.
Promise (reference, deadline): ranks still running at the deadline are asked for their stacks and killed; the
call returns within the deadline + about 0.5 s. Held if each of 5 calls (deadline 4 s) returns within
deadline + 1.0 s, and every child is gone 1 s later. Run with run cgroups, and with BARRIERLAB_CGROUP=0."""

from _h import driver, finish, result_line

CODE = r"""
import json, os, signal, threading, time
import barrierlab as bl
PIDS = WORK + "/pids"
os.mkdir(PIDS)
def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False
def make(i):
    def f():
        import torch.distributed as dist
        dist.barrier()
        def loop():
            while True:
                pid = os.fork()
                if pid == 0:
                    open(f"{PIDS}/{i}-{os.getpid()}", "w").close()
                    time.sleep(300)
                    os._exit(0)
                time.sleep(0.01)
        threading.Thread(target=loop, daemon=True).start()
        time.sleep(60)
    return f
bl.run(lambda: 1, 2)
out = []
for i in range(5):
    t0 = time.monotonic()
    r = bl.run(make(i), 2, timeout=2, deadline=4)
    secs = time.monotonic() - t0
    time.sleep(1)
    pids = [int(n.split("-")[1]) for n in os.listdir(PIDS) if n.startswith(f"{i}-")]
    live = [p for p in pids if alive(p)]
    for p in live:
        os.kill(p, signal.SIGKILL)
    out.append({"secs": round(secs, 2), "started": len(pids), "alive": len(live), "status": [str(x.status) for x in r]})
    print(out[-1], flush=True)
print("RESULT " + json.dumps(out))
"""
broken = []
for label, extra in (("run cgroups", {}), ("BARRIERLAB_CGROUP=0", {"BARRIERLAB_CGROUP": "0"})):
    d = driver(CODE, timeout=100, extra_env=extra)
    res = result_line(d["out"])
    if res is None:
        broken.append(f"{label}: no result (rc {d['rc']}): {d['err'][-600:]}")
        continue
    secs = [r["secs"] for r in res]
    print(
        f"{label}: call times {secs} (deadline 4), children started {[r['started'] for r in res]}, alive 1 s later {[r['alive'] for r in res]}"
    )
    over = [s for s in secs if s > 5.0]
    if over:
        broken.append(f"{label}: {len(over)} of {len(secs)} calls past deadline + 1 s: {secs}")
    if any(r["alive"] for r in res):
        broken.append(f"{label}: children alive 1 s after the call: {[r['alive'] for r in res]}")
    if d["left"]:
        broken.append(f"{label}: left after the driver: {d['left'][:5]}")
finish(broken, "a rank forking every 10 ms until the deadline")
