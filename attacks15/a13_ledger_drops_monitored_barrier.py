"""a13: the ledger leaves out monitored_barrier calls, and after one the diagnosis and the ledger number the
same call differently. monitored_barrier(); then rank 0 all_reduce vs ranks 1-2 barrier: the headline says
"call #2 is rank 0's all_reduce ... and ranks 1 and 2's barrier"; the ledger has no monitored_barrier row and
shows the mismatch as row 3. (A clean run of monitored_barrier, barrier, monitored_barrier: the headline says
"the same 3 collective calls", the ledger shows one row, "3  barrier".)
Promise 4: diagnoses are right (the ledger is printed with every diagnosis by `barrierlab run`).
Exits 0 if the promise holds, 1 if it breaks."""

import re
import sys

import torch
import torch.distributed as dist

import barrierlab as bl


def clean():
    dist.monitored_barrier()
    dist.barrier()
    dist.monitored_barrier()


def mismatch_after_a_monitored_barrier():
    dist.monitored_barrier()
    if dist.get_rank() == 0:
        dist.all_reduce(torch.ones(1))
    else:
        dist.barrier()


def main() -> int:
    broken = []
    run = bl.run(clean, 3, live=False)
    ledger = run.ledger()
    print(run.diagnosis.headline)
    print(ledger, "\n")
    if "monitored_barrier" not in ledger:
        broken.append("clean run: the ledger has no monitored_barrier row (2 calls per rank)")
    run = bl.run(mismatch_after_a_monitored_barrier, 3, timeout=2, deadline=8, live=False)
    headline, ledger = run.diagnosis.headline, run.ledger()
    print(headline)
    print(ledger)
    # the headline names the learner's call number and, where the ledger numbers it otherwise, the ledger's row
    said = re.search(r"call #(\d+)(?: \(row (\d+) of the ledger\))? is", headline)
    row = said and (said.group(2) or said.group(1))
    rows = {line.split()[0]: line for line in ledger.splitlines() if line[:1].isdigit()}
    if not said:
        broken.append(f"the headline names no call: {headline!r}")
    elif "all_reduce" not in rows.get(row, ""):
        broken.append(
            f"the headline names call #{said.group(1)}, row {row}; the ledger's row {row} is "
            f"{rows.get(row, 'missing')!r} and the all_reduce is in row "
            f"{[k for k, v in rows.items() if 'all_reduce' in v]}"
        )
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
