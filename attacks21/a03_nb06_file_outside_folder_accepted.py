"""nb06's check accepts a FILE handoff, with broadcast_object_list used as a barrier, when the file is not in the
`folder` the check hands over, and says "nothing handed over through a file".

Promise (nb06 docstring, notebook 06 §7): "Rewrite it with no file and no barrier"; the check decides from
"every file access in the folder (not only what is left in it: a file written and removed again is still a file
handoff)". Here the learner keeps the original file handoff (rank 0 writes vocab.json, every rank reads it) but
writes it to a cache folder of its own instead of `folder`, and replaces the barrier by
dist.broadcast_object_list([path], src=0), which only orders the read after the write. The recorder saw every
access (they are in the run's record), but the check only looks inside `folder`.
"""

import json
import os
import shutil
import tempfile

import _common  # noqa: F401
import torch.distributed as dist

from barrierlab.exercises import nb06
from barrierlab.scenarios.store_handoff import build_vocab

CACHE = tempfile.mkdtemp(prefix="a21-a03-cache-")


def share_vocab(folder):
    """Rank 0 builds the vocabulary; every rank returns it (through a file in a cache folder)."""
    rank = dist.get_rank()
    path = os.path.join(CACHE, "vocab.json")
    if rank == 0:
        with open(path, "w") as f:
            json.dump(build_vocab(), f)
    dist.broadcast_object_list([path], src=0)  # a barrier in disguise: the others wait for rank 0's write
    with open(path) as f:
        return json.load(f)


try:
    verdict = nb06.check_share_vocab(share_vocab)
    print("check:", verdict.message)
    print("files left in the cache folder:", os.listdir(CACHE))
finally:
    shutil.rmtree(CACHE, ignore_errors=True)
_common.finish(
    bool(verdict.ok),
    "nb06 accepts a file handoff (outside `folder`) ordered by broadcast_object_list"
    if verdict.ok
    else "nb06 refused the file handoff",
)
