"""Notebook 06's exercise check: hand rank 0's vocabulary over as an object, not through a file and a barrier.

Decided from the run: what every rank returned, which collectives each rank called (recorded), which
rank ran ``build_vocab`` (it records a "build vocab" span), and what is left in the folder.
"""

from __future__ import annotations

import os
import tempfile

import barrierlab as bl
from barrierlab.exercises import Verdict

EXPECTED = {"<pad>": 0, "<unk>": 1, "barrier": 2, "rank": 3, "store": 4}



def check_share_vocab(fn, world_size: int = 4) -> Verdict:
    """Run ``fn(folder)`` on ``world_size`` ranks: ✓ if every rank returns rank 0's vocabulary, built once
    on rank 0, through one ``broadcast_object_list`` and nothing else (no barrier, no file)."""
    with tempfile.TemporaryDirectory() as folder:
        run = bl.run(fn, world_size, args=(folder,), timeout=3)
        left = sorted(os.listdir(folder))
    if not run.ok:
        return Verdict(False, f"✗ not yet: ranks {run.failed} did not finish: {run.diagnosis.headline}")
    wrong = [r.rank for r in run if r.value != EXPECTED]
    if wrong:
        return Verdict(False, f"✗ not yet: ranks {wrong} did not return the vocabulary "
                               f"(rank {wrong[0]}: {run[wrong[0]].value!r})")
    builders = [r.rank for r in run if any(e.name == "build vocab" for e in r.events)]
    if builders != [0]:
        return Verdict(False, f"✗ not yet: build_vocab ran on ranks {builders}; only rank 0 should pay for it "
                               "(on a real job: one download, one scan of the corpus)")
    calls = [[e.name for e in r.events if e.kind in ("collective", "p2p")] for r in run]
    if any("barrier" in c for c in calls):
        return Verdict(False, "✗ not yet: share_vocab still calls dist.barrier()")
    if left:
        return Verdict(False, f"✗ not yet: share_vocab still writes files: {left}")
    if any(c != ["broadcast_object_list"] for c in calls):
        seen = sorted({name for c in calls for name in c})
        return Verdict(False, "✗ not yet: use one dist.broadcast_object_list and nothing else (the ranks called: "
                               f"{', '.join(seen) or 'no collective'})")
    return Verdict(True, "✓ every rank got rank 0's vocabulary through one broadcast_object_list: "
                          "built once, no file, no barrier")

