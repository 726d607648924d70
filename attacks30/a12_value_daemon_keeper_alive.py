"""Promise (docs/containment.md, keeper row), the control for a01: whatever the trial child that unpickles a value
starts, "however it detaches, stays the keeper's descendant and is killed when the children end".
Attack: a value whose unpickling double-forks a daemon in a session of its own, renames it (PR_SET_NAME), closes
every descriptor it inherited and sleeps; the keeper is left alone. Anything left after the call?"""

from _h import run_driver, verdict

DRIVER = r'''
import time, barrierlab as bl

PAYLOAD = """
import os, time, ctypes
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b"innocent"), 0, 0, 0)
        os.closerange(0, 4096)
        for _ in range(600):
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
"""

class Evil:
    def __reduce__(self):
        return (exec, (PAYLOAD,))

bl.run(lambda: 0, 2)  # warm up
t = time.monotonic()
run = bl.run(lambda: Evil(), 2, timeout=2, deadline=4)
print("call took %.2f s" % (time.monotonic() - t))
print(repr(run)[:400])
time.sleep(1)
'''

r = run_driver(DRIVER, timeout=90)
r.show()
verdict(bool(r.leftovers), f"{len(r.leftovers)} process(es) left after the call")
