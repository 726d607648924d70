"""a05 — containment: what ranks start in the ways real code does (double fork + setsid without exec,
subprocess with start_new_session, a child that ignores SIGTERM/SIGHUP, a thread forking children until the
rank exits, a shell child with an empty environment in the rank's own session), with and without the rank then
killing the warm process (its parent) or stopping it with SIGSTOP. Run with the run cgroups (default here) and
with BARRIERLAB_CGROUP=0 (the subreaper, marks and sweep).
Promise (containment.md): every process a rank starts ends with the run (documented gaps excluded: we never
rename and close descriptors, never exec with an empty environment in a session of its own); every call ends by
its deadline; the next run works; nothing is left after the caller exits."""

import sys

from _h import driver, finish, result_line

CODE = r"""
import json, os, signal, subprocess, sys, time, threading
import barrierlab as bl

PIDS = WORK + "/pids"
os.mkdir(PIDS)

def note(case, pid):
    open(f"{PIDS}/{case}-{pid}", "w").close()

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False

def double_fork(case):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            note(case, os.getpid())
            signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)
            t = time.time()
            while time.time() - t < 300:
                time.sleep(0.1)
            os._exit(0)
        os._exit(0)
    os.wait()

def popen_session(case):
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", TOKEN + case],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    note(case, p.pid)

def shell_empty_env(case):
    p = subprocess.Popen(["/bin/sh", "-c", "trap '' TERM HUP; sleep 300; : " + TOKEN], env={},
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    note(case, p.pid)

def fork_thread(case):
    def loop():
        while True:
            pid = os.fork()
            if pid == 0:
                note(case, os.getpid())
                time.sleep(300)
                os._exit(0)
            time.sleep(0.01)
    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.1)

STARTERS = {"double_fork": double_fork, "popen_session": popen_session, "shell_empty_env": shell_empty_env,
            "fork_thread": fork_thread}

def make(case, starter, then):
    def f():
        import torch.distributed as dist
        dist.barrier()
        STARTERS[starter](case)
        time.sleep(0.2)
        if then == "kill_warm" and dist.get_rank() == 1:
            os.kill(os.getppid(), signal.SIGKILL)
        if then == "stop_warm" and dist.get_rank() == 1:
            os.kill(os.getppid(), signal.SIGSTOP)
        if then == "stuck":
            time.sleep(60)
        return 1
    return f

bl.run(lambda: 1, 2)
out = {}
for then in ("return", "stuck", "kill_warm", "stop_warm"):
    for starter in STARTERS:
        if then == "stop_warm" and starter != "double_fork":
            continue
        case = f"{starter}.{then}"
        t0 = time.monotonic()
        rec = {}
        try:
            run = bl.run(make(case, starter, then), 2, timeout=2, deadline=4)
            rec["status"] = [str(r.status) for r in run]
        except BaseException as e:
            rec["error"] = "bl.run raised " + type(e).__name__ + ": " + str(e)[:300]
        rec["secs"] = round(time.monotonic() - t0, 2)
        time.sleep(1.0)
        pids = [int(n.split("-")[-1]) for n in os.listdir(PIDS) if n.startswith(case + "-")]
        rec["started"] = len(pids)
        rec["alive"] = [p for p in pids if alive(p)]
        for p in rec["alive"]:
            try: os.kill(p, signal.SIGKILL)
            except OSError: pass
        try:
            nxt = bl.run(lambda: 1, 2, timeout=2, deadline=6)
            rec["next"] = [str(r.status) for r in nxt]
        except BaseException as e:
            rec["next"] = "raised " + type(e).__name__
        print(case, rec, flush=True)
        out[case] = rec
print("RESULT " + json.dumps(out))
"""

extra = {"BARRIERLAB_CGROUP": "0"} if "nocgroup" in sys.argv[1:] else {}
d = driver(CODE, timeout=118, extra_env=extra, settle=3)
res = result_line(d["out"])
broken = []
label = "BARRIERLAB_CGROUP=0" if extra else "run cgroups"
if res is None:
    broken.append(
        f"no result within {d['seconds']:.0f} s (rc {d['rc']}); stdout: {d['out'][-2500:]} stderr: {d['err'][-1500:]}"
    )
else:
    for case, r in res.items():
        print(case, r)
        if "error" in r:
            broken.append(f"{case}: {r['error']}")
        if r["secs"] > 5.0:
            broken.append(f"{case}: bl.run took {r['secs']} s, deadline 4")
        if r["started"] == 0:
            print(f"   (note: {case} started nothing)")
        if r["alive"]:
            broken.append(
                f"{case}: {len(r['alive'])} of {r['started']} processes the ranks started alive 1 s after the call: {r['alive'][:5]}"
            )
        if r["next"] != ["finished", "finished"]:
            broken.append(f"{case}: next run {r['next']}")
if d["left"]:
    broken.append(f"processes with the driver's marker alive 3 s after the driver exited: {d['left']}")
finish(broken, f"containment of detaching children ({label})")
