"""nb00's check refuses a correct fix written with the process group's own method, dist.group.WORLD.barrier().wait().

Promise (notebook 00's exercise, nb00 docstring): the check decides from what the run recorded whether the
writes are ordered before the counts, by "a barrier, a blocking all_reduce / all_gather, an async call and its
work.wait() ...". ProcessGroup.barrier() is torch's c10d API under dist.barrier (distributed_c10d.barrier calls
group.barrier(opts=opts) and then work.wait()); called on the default group and waited on, it orders exactly as
dist.barrier() does. Here the recorder does not record it, so the check says ✗ and names a race "nothing orders".
For comparison the same fix with dist.barrier(async_op=True).wait() is checked too.
"""

import os
import time

import _common  # noqa: F401
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises.nb00 import check_everyone_ready


def with_group_method(folder, delays):
    rank = dist.get_rank()
    time.sleep(delays[rank])
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{rank}"), "w").close()
    dist.group.WORLD.barrier().wait()  # the default group's own barrier, waited on
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


def with_async_barrier(folder, delays):
    rank = dist.get_rank()
    time.sleep(delays[rank])
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{rank}"), "w").close()
    dist.barrier(async_op=True).wait()
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


method = check_everyone_ready(with_group_method, quiet=True)
print("dist.group.WORLD.barrier().wait():", method.message[:400])
plain = check_everyone_ready(with_async_barrier, quiet=True)
print("dist.barrier(async_op=True).wait():", plain.message[:200])
_common.finish(plain.ok and not method.ok, "nb00 refuses ProcessGroup.barrier().wait(), which orders as dist.barrier()")
