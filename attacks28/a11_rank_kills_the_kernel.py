"""a11 — a rank SIGKILLs the calling process (the kernel / the script that called bl.run) after starting
detached children: a double-forked daemon without exec (own session), a Popen'd interpreter with
start_new_session, a plain child in the rank's session, a thread forking children every 10 ms. With run cgroups
and with BARRIERLAB_CGROUP=0.
Promise (containment.md, 'the kernel, when it is SIGKILLed'): its warm process sees it die, kills the ranks and
what they started, and removes the kernel's run folders. Held if, 5 s after the caller died, no process of the run
is alive and no run folder of the caller's PID is left."""

import glob
import os
import tempfile

from _h import alive, driver, finish

CODE = r"""
import os, signal, subprocess, sys, threading, time
import barrierlab as bl
PIDS = WORK + "/pids"
os.mkdir(PIDS)
print("KERNEL", os.getpid(), flush=True)

def note(pid):
    open(f"{PIDS}/{pid}", "w").close()

def f():
    import torch.distributed as dist
    dist.barrier()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            note(os.getpid())
            while True: time.sleep(0.1)
        os._exit(0)
    os.wait()
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    note(p.pid)
    p = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    note(p.pid)
    def loop():
        while True:
            pid = os.fork()
            if pid == 0:
                note(os.getpid()); time.sleep(300); os._exit(0)
            time.sleep(0.01)
    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.3)
    dist.barrier()
    if dist.get_rank() == 1:
        with open(f"/proc/{os.getppid()}/stat") as fh:
            kernel = int(fh.read().rsplit(")", 1)[1].split()[1])
        os.kill(kernel, signal.SIGKILL)
    time.sleep(30)

bl.run(lambda: 1, 2)
bl.run(f, 2, timeout=20, deadline=40)
print("RETURNED (should not)", flush=True)
"""

broken = []
for label, extra in (("run cgroups", {}), ("BARRIERLAB_CGROUP=0", {"BARRIERLAB_CGROUP": "0"})):
    import _h

    holder = {}
    # run the driver; it is SIGKILLed by its rank; then look for what is left
    work_pids = []
    orig_rmtree = _h.shutil.rmtree

    def keep(path, ignore_errors=False):  # read the pids before the work folder goes
        holder["pids"] = (
            [int(n) for n in os.listdir(os.path.join(path, "pids"))]
            if os.path.isdir(os.path.join(path, "pids"))
            else []
        )
        orig_rmtree(path, ignore_errors=True)

    _h.shutil.rmtree = keep
    d = driver(CODE, timeout=60, extra_env=extra, settle=5)
    _h.shutil.rmtree = orig_rmtree
    kernel = next((int(l.split()[1]) for l in d["out"].splitlines() if l.startswith("KERNEL")), None)
    pids = holder.get("pids", [])
    print(
        f"{label}: driver rc={d['rc']} after {d['seconds']:.1f} s (kernel pid {kernel}); {len(pids)} processes started by the ranks"
    )
    if d["rc"] != -9:
        broken.append(
            f"{label}: the driver was not killed by its rank (rc {d['rc']}): {d['out'][-300:]} {d['err'][-300:]}"
        )
    live_started = [p for p in pids if alive(p)]
    if live_started:
        broken.append(
            f"{label}: {len(live_started)} of {len(pids)} processes the ranks started alive 5 s after the kernel died"
        )
    if d["left"]:
        broken.append(f"{label}: processes of the run alive 5 s after the kernel died: {d['left'][:8]}")
    if kernel:
        folders = glob.glob(os.path.join(tempfile.gettempdir(), f"barrierlab-run-{kernel}-*"))
        if folders:
            broken.append(f"{label}: run folders of the dead kernel left: {folders}")
            for f in folders:
                import shutil

                shutil.rmtree(f, ignore_errors=True)
    for p in live_started:
        try:
            os.kill(p, 9)
        except OSError:
            pass
finish(broken, "a rank that SIGKILLs the kernel after starting detached children")
