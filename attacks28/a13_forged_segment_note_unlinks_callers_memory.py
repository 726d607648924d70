"""a13 — the caller (a notebook) holds a POSIX shared-memory segment of its own (SharedMemory(create=True)); a rank
appends one line to the run folder's `segments` notes naming that segment with its device and inode (what
os.stat shows any process of the user), and never touches the segment itself. A second variant (informational: Python 3.11's resource tracker
unlinks it itself, as under torchrun): the rank only
attaches to the segment (SharedMemory(name=...), careless code that reads the notebook's data) and returns.
Promise (containment.md, Shared memory): after the run, barrierlab unlinks the segments the ranks created and
left, 'never a segment the run did not create (another notebook's, one a rank only attached to ...)'. Held if the
caller's segment still exists after the forged-note run."""

from _h import driver, finish, result_line

CODE = r"""
import json, os, time
from multiprocessing import shared_memory
import barrierlab as bl
mine = shared_memory.SharedMemory(create=True, size=4096)
mine.buf[:5] = b"hello"
NAME = mine.name
def forge():
    import json, os
    d = os.readlink("/proc/self/fd/600")
    st = os.stat("/dev/shm/" + NAME)
    with open(d + "/segments", "a") as f:
        f.write(json.dumps(["+", "shared_memory", "/" + NAME, st.st_dev, st.st_ino]) + "\n")
    return 1
def attach():
    from multiprocessing import shared_memory
    s = shared_memory.SharedMemory(name=NAME)
    data = bytes(s.buf[:5])
    s.close()
    return data
out = {}
for name, fn in (("forged note", forge), ("attach", attach)):
    r = bl.run(fn, 2, timeout=2, deadline=6)
    time.sleep(2.0)  # the run folder is removed in the background
    out[name] = {"status": [str(x.status) for x in r], "values": [repr(x.value) for x in r],
                 "exists": os.path.exists("/dev/shm/" + NAME)}
    if not out[name]["exists"]:
        mine.close(); mine = shared_memory.SharedMemory(create=True, size=4096, name=NAME)
print("RESULT " + json.dumps(out))
mine.close(); mine.unlink()
"""
broken = []
d = driver(CODE, timeout=100)
res = result_line(d["out"])
if res is None:
    broken.append(f"no result (rc {d['rc']}): {d['out'][-500:]} {d['err'][-800:]}")
else:
    for name, r in res.items():
        print(name, r)
        if name == "attach":  # Python 3.11's own resource tracker unlinks a segment a process only attached to
            print("   (attach: not counted; a plain `python -c` that attaches and exits unlinks it too, bpo-39959)")
            continue
        if not r["exists"]:
            broken.append(
                f"{name}: the caller's own segment /dev/shm/<name> was unlinked after the run (ranks: {r['status']})"
            )
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "the caller's shared memory after a run")
