"""barrier(async_op=True): a Work handle to poll and wait on; a timed-out wait() does not cancel the barrier."""

import time
from datetime import timedelta

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(late_rank=3, late_by=0.6, patience=0.1):
    rank = dist.get_rank()
    if rank == late_rank:
        time.sleep(late_by)  # this rank is still busy elsewhere
    work = dist.barrier(async_op=True)  # enters the barrier and returns at once
    facts = {"completed right away": work.is_completed()}
    with span("other work"):
        time.sleep(0.1)  # the point of async_op: do something useful meanwhile
    try:
        with span("wait(timeout)", kind="wait"):  # a wait span: the timeline shows where the rank waited
            work.wait(timeout=timedelta(seconds=patience))
        facts["wait(timeout) raised"] = False
    except RuntimeError:  # "Operation timed out!"
        facts["wait(timeout) raised"] = True
    facts["completed after that"] = work.is_completed()
    with span("wait()", kind="wait"):
        work.wait()  # the same barrier, still in progress: it completes when late_rank arrives
    facts["completed in the end"] = work.is_completed()
    return facts


if __name__ == "__main__":
    torchrun_main(scenario)
