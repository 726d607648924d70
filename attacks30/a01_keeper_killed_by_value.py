"""Promise (docs/containment.md, keeper row): "the checking child that unpickles a returned value, and what it
starts: a keeper forked from the kernel ... is a child subreaper: whatever a child starts, however it detaches,
stays the keeper's descendant and is killed when the children end ... or the kernel dies".
Attack: a rank returns a value whose unpickling (in the trial child) forks a detached daemon and then SIGKILLs
its parent, the keeper. The daemon is re-parented past the dead keeper (to init): does it outlive the call, and
the kernel?"""

from _h import run_driver, verdict

DRIVER = r'''
import time, barrierlab as bl

PAYLOAD = """
import os, signal, time
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)
os.kill(os.getppid(), signal.SIGKILL)  # the keeper
"""

class Evil:
    def __reduce__(self):
        return (exec, (PAYLOAD,))

def fn():
    return Evil()

bl.run(lambda: 0, 2)  # warm up
t = time.monotonic()
run = bl.run(fn, 2, timeout=2, deadline=4)
print("call took %.2f s" % (time.monotonic() - t))
print(repr(run)[:600]); print("values:", [repr(v)[:200] for v in run.values])
time.sleep(1)
'''

r = run_driver(DRIVER, timeout=90)
r.show()
verdict(
    bool(r.leftovers),
    f"{len(r.leftovers)} process(es) started by the value's unpickling outlived the call and the kernel",
)
