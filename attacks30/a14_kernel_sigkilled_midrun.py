"""Promise (docs/containment.md: "the kernel, when it is SIGKILLed: its warm process sees it die, kills the ranks and
what they started"; docs/reference.md: "Ranks exit within a second if the kernel dies"); the brief: nothing a rank
started outlives the kernel.
Attack: a kernel process runs bl.run; each rank starts a detached daemon (double fork, setsid, renamed, descriptors
closed) and a plain `sleep 60` child, then waits. The kernel is SIGKILLed mid-run. After 3 s, is anything left?"""

from _h import run_driver, verdict

KERNEL = r"""
import barrierlab as bl
def fn():
    import os, time, ctypes, subprocess
    subprocess.Popen(["sleep", "60"], start_new_session=True)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b"innocent"), 0, 0, 0)
            os.closerange(0, 4096)
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    open("started", "a").close()
    time.sleep(60)
bl.run(lambda: 0, 2)
bl.run(fn, 2, timeout=30, deadline=60)
"""

DRIVER = r"""
import os, signal, subprocess, sys, time
k = subprocess.Popen([sys.executable, "kernel.py"])
t = time.monotonic()
while not os.path.exists("started") and time.monotonic() - t < 60:
    time.sleep(0.05)
time.sleep(0.5)
os.kill(k.pid, signal.SIGKILL)
k.wait()
print("kernel SIGKILLed; waiting 3 s")
time.sleep(3)
"""

r = run_driver(DRIVER, files={"kernel.py": KERNEL}, timeout=120, settle=0.5)
r.show()
verdict(
    bool(r.leftovers),
    f"{len(r.leftovers)} process(es) left 3 s after the kernel was SIGKILLed; run folders left: {len(r.leftover_files)}",
)
