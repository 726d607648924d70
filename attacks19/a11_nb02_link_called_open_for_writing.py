"""a11: notebook 02's check refuses a save that removes the old checkpoint and hard-links the new one into place,
saying it wrote checkpoint.pt in place with "open(path) for writing": the save never opens the path.

Promise 4: a wrong answer is refused with a true explanation. The save writes a temporary file, removes the
old checkpoint.pt, then os.link(tmp, path) (a hard link cannot replace an existing name). What is wrong is the
removal before the link (a crash between leaves no checkpoint; the check has that message for a rename). The
recorder keeps os.link as a plain "write" event without a call name, and nb02._not_atomic words every such
write as "open(path) for writing at line N".
"""

import os
import sys

import torch

from barrierlab.exercises.nb02 import check_save_atomically


def save_by_link(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    if os.path.exists(path):
        os.remove(path)
    os.link(tmp, path)  # the new name appears whole
    os.remove(tmp)


verdict = check_save_atomically(save_by_link, quiet=True, seed=2)
print(verdict)
if verdict.ok:
    print("BROKEN: accepted (the old checkpoint is removed before the new one is in place)")
    sys.exit(1)
if "open(path) for writing" in verdict.message:
    print(
        "BROKEN: the refusal says the save opened checkpoint.pt for writing; it never did (os.link made the "
        "name), and the removal before the link, the real flaw, is not named"
    )
    sys.exit(1)
print("held")
