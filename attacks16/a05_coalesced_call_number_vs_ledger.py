"""a05: two all_reduces in a _coalescing_manager, then rank 1 alone calls all_reduce before the barrier. The
diagnosis names the mismatch "call #3" while the ledger printed with it shows the same barrier/all_reduce at row
#2 (the coalesced pair is one position in the group's sequence): the two numbers for one call disagree.
Promise 4 (the diagnosis is right and points at the right call).
Exits 0 if the promise holds, 1 if it breaks."""

import re
import sys

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager

import barrierlab as bl


def coalesced_then_mismatch():
    tensors = [torch.ones(3), torch.ones(2)]
    with _coalescing_manager(async_ops=True) as manager:
        for t in tensors:
            dist.all_reduce(t)
    manager.wait()
    if dist.get_rank() == 1:
        dist.all_reduce(torch.ones(1))  # the bug: rank 1 only
    dist.barrier()


def main() -> int:
    run = bl.run(coalesced_then_mismatch, 2, timeout=3, deadline=10, live=False)
    diagnosis, ledger = str(run.diagnosis), run.ledger()
    print(diagnosis.splitlines()[0])
    print(ledger)
    # the learner's call number, and the ledger's row where the ledger numbers the call otherwise
    said = re.search(r"call #(\d+)(?: \(row (\d+) of the ledger\))?", diagnosis)
    row = next((line.split()[0] for line in ledger.splitlines() if "barrier @" in line), None)
    if said is None or row is None:
        print("could not read the numbers")
        return 1
    if (said.group(2) or said.group(1)) != row:
        print(f"BROKEN: the diagnosis says {said.group(0)}, the ledger shows that call at #{row}")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
