"""Promise 4: a learner's CORRECT answer with another file layout is accepted; an explanation is right.

Notebook 02's save_atomically, answered with a symlink swap: torch.save to a fresh file next to the checkpoint,
a symlink to it made under a temporary name, then os.replace(link, path) -- checkpoint.pt is always a whole file
(the old one, or the new one through the link). Every kill leaves the old checkpoint intact and every rank
loads step 2, yet the check refuses it, saying "save wrote checkpoint.pt in place (torch.save(..., path) at
line N)": line N saved to `.ckpt-PID.pt`, not to checkpoint.pt. The check compares os.path.realpath of each
recorded access with realpath(checkpoint.pt) after the run, when checkpoint.pt is a link to that very file.
Exits 0 when the answer is accepted, 1 when it is refused.
"""

import os
import sys

import torch

from barrierlab.exercises.nb02 import check_save_atomically


def save_atomically(obj, path):
    folder = os.path.dirname(path)
    real = os.path.join(folder, f".ckpt-{os.getpid()}-{os.urandom(4).hex()}.pt")
    torch.save(obj, real)  # a new file: a kill here leaves checkpoint.pt as it was
    link = path + ".lnk"
    os.symlink(real, link)
    os.replace(link, path)  # one step: checkpoint.pt is now the new file


def main() -> int:
    verdict = check_save_atomically(save_atomically, quiet=True, seed=3)
    print(verdict)
    if not verdict.ok:
        print(
            "BROKEN: a correct symlink-swap save is refused"
            + (" with a false claim that torch.save wrote checkpoint.pt in place" if "in place" in str(verdict) else "")
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
