"""a12: run.summary()/run.waits() call a rank 89% idle while its main thread computed the whole time.

Promise 4: what run.summary() says is true. Rank 0 starts a thread that calls dist.barrier() (a background
sync, as an async checkpoint saver does) and computes for 1 s in its main thread (a "compute" span); rank 1
reaches the barrier 0.9 s late. The summary says rank 0 was 89% idle ("waited 0.9 s ... the others waited for
it"), and waits() gives rank 0 busy = 0.11 s, less than its own 1.0 s compute span: waits._rank_waits counts
every lane's collective time as the rank's waiting, whatever its other lanes were doing.
"""

import sys
import threading
import time

import torch.distributed as dist

import barrierlab as bl


def background_barrier():
    rank = dist.get_rank()
    if rank == 1:
        time.sleep(0.9)
    saver = threading.Thread(target=dist.barrier)
    saver.start()
    if rank == 0:
        with bl.span("compute"):
            time.sleep(1.0)
    saver.join()


run = bl.run(background_barrier, 2, timeout=5, deadline=30)
print(run.summary())
numbers = run.waits()
compute = sum(e.end - e.start for e in run[0].events if e.name == "compute" and e.end is not None)
print(
    f"rank 0: busy {numbers.ranks[0].busy:.2f} s, wait {numbers.ranks[0].wait:.2f} s, "
    f"idle {numbers.ranks[0].idle_fraction:.0%}; its compute span: {compute:.2f} s"
)
if run.ok and numbers.ranks[0].busy < compute - 0.05:
    print("BROKEN: rank 0 is reported idle/waiting while its main thread was inside a compute span; busy < the span")
    sys.exit(1)
print("held")
