"""a08: an env= value that barrierlab itself hands to torch and torch refuses: TORCH_DISTRIBUTED_DEBUG="bogus".

Promise (docs/reference.md, `bl.run`): "Every argument is checked before anything starts, with the parameter
named: TypeError for a wrong type, ValueError for a wrong value"; `env`: "TORCH_DISTRIBUTED_DEBUG is re-read for
you" (barrierlab calls dist.set_debug_level_from_env() in each rank). Other env values barrierlab acts on
(GLOO_SOCKET_IFNAME, MASTER_ADDR, RANK...) are refused before anything starts, naming env. Broken if the call
starts ranks that then fail in set-up instead of raising a ValueError that names env.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h

DRIVER = r"""
import time
import barrierlab as bl

def f():
    import torch.distributed as dist
    dist.barrier()
    return dist.get_rank()

bl.run(f, 2)  # warm
for value in ("bogus", "detail "):
    t = time.monotonic()
    try:
        r = bl.run(f, 2, env={"TORCH_DISTRIBUTED_DEBUG": value}, timeout=2, deadline=6)
        print(f"VALUE {value!r}: returned after {time.monotonic() - t:.2f} s: " + " | ".join(str(r).splitlines()[:3]))
    except (TypeError, ValueError) as e:
        print(f"VALUE {value!r}: refused: {type(e).__name__}: {str(e)[:200]}")
"""

r = _h.run_driver(DRIVER, timeout=120)
print(r.show())
lines = [l for l in r.stdout.splitlines() if l.startswith("VALUE")]
broken = any("returned after" in l and "setup failed" in l for l in lines) or len(lines) < 2
_h.verdict(
    broken or bool(r.survivors), "env={'TORCH_DISTRIBUTED_DEBUG': <a value torch refuses>}: " + " / ".join(lines)
)
