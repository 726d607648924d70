"""After one timed-out wait, gloo closes every connection of the rank, not only the one that timed out."""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def _outcome(what, t0, error=None):
    """(what, seconds since the start, "ok" or the kind of error as barrierlab names it)."""
    from barrierlab.diagnose import explain_error

    kind = "ok" if error is None else (explain_error(str(error)) or ("error",))[0]
    return what, round(time.monotonic() - t0, 2), kind


def scenario(wait=0.3):
    """Rank 0 waits `wait` seconds for a message from rank 1 that never comes, then tries to send to rank 2;
    rank 2 waits for that message with the group's (much longer) timeout; rank 1 does nothing."""
    rank, t0 = dist.get_rank(), time.monotonic()
    outcomes = []
    if rank == 0:
        work = dist.irecv(torch.zeros(1), src=1)
        try:
            work.wait(timeout=timedelta(seconds=wait))  # give up on rank 1 after `wait` seconds
            outcomes.append(_outcome("recv from rank 1", t0))
        except RuntimeError as error:
            outcomes.append(_outcome("recv from rank 1", t0, error))
        try:
            dist.send(torch.ones(1), dst=2)  # carry on with rank 2, which did nothing wrong
            outcomes.append(_outcome("send to rank 2", t0))
        except RuntimeError as error:
            outcomes.append(_outcome("send to rank 2", t0, error))
    elif rank == 1:
        time.sleep(3 * wait)  # busy elsewhere: alive, but never sends to rank 0
    elif rank == 2:
        try:
            dist.recv(torch.zeros(1), src=0)
            outcomes.append(_outcome("recv from rank 0", t0))
        except RuntimeError as error:
            outcomes.append(_outcome("recv from rank 0", t0, error))
    return outcomes


if __name__ == "__main__":
    torchrun_main(scenario)
