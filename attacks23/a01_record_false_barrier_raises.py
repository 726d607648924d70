"""Promise (docs/reference.md, `bl.run(..., record, ...)`; tests/test_record_fidelity.py's premise): record=False
runs the learner's code exactly as with recording, only without the record. Attack: the plainest rank function,
`dist.barrier()` on every rank, with record=False. Held if every rank finishes."""

import sys

from _common import python

CODE = r"""
import torch.distributed as dist
import barrierlab as bl

def step():
    dist.barrier()
    return dist.get_rank()

for record in (True, False):
    run = bl.run(step, 2, record=record, live=False)
    print(f"record={record}: ok={run.ok} statuses={[str(r.status) for r in run]}")
    if not run.ok:
        print("   rank 0:", run[0].error_message.splitlines()[0][:200])
        print("   headline:", run.diagnosis.headline)
"""

rc, out, err = python(CODE)
print(out, err[-2000:] if rc else "")
broken = "record=False: ok=False" in out or rc != 0
print("BROKEN: dist.barrier() fails in a rank run with record=False" if broken else "held")
sys.exit(1 if broken else 0)
