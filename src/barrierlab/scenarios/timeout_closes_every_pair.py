"""After one timed-out wait (a recv's or a barrier's own timeout), gloo closes every connection of the rank,
not only the one that timed out."""

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


def scenario(wait=0.3, give_up="recv"):
    """Rank 0 gives up after `wait` seconds on a message from rank 1 that never comes (``give_up="recv"``) or
    on a barrier the others never enter (``"barrier"``: ``barrier(timeout=...)``), then tries to send to
    rank 2; rank 2 waits for that message with the group's (much longer) timeout; rank 1 does nothing."""
    if give_up not in ("recv", "barrier"):
        raise ValueError(f"give_up must be 'recv' or 'barrier', not {give_up!r}")
    rank, t0 = dist.get_rank(), time.monotonic()
    outcomes = []
    if rank == 0:
        what = "recv from rank 1" if give_up == "recv" else f"barrier({wait:g} s)"
        try:
            if give_up == "recv":
                work = dist.irecv(torch.zeros(1), src=1)
                work.wait(timeout=timedelta(seconds=wait))  # give up on rank 1 after `wait` seconds
            else:
                dist.barrier(timeout=timedelta(seconds=wait))  # its own timeout, not the group's
            outcomes.append(_outcome(what, t0))
        except RuntimeError as error:
            outcomes.append(_outcome(what, t0, error))
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
