"""Promise 4 (exercise checks are right) for notebook 02's check_save_atomically.

A right answer: write the checkpoint into a fresh temporary folder made *inside* the checkpoint's own folder
(tempfile.mkdtemp(dir=os.path.dirname(path))), then os.replace it onto path. A folder just made inside the
checkpoint's folder is on the same file system, so the rename is atomic (and the kills in the check leave the old
checkpoint intact). The check rejects it: "the temporary file ... is not in checkpoint.pt's directory: os.replace
from another file system fails with EXDEV ... Put it next to the checkpoint".
"""

import os
import sys
import tempfile

import torch

from barrierlab.exercises.nb02 import check_save_atomically


def save_atomically(obj, path):
    folder = tempfile.mkdtemp(dir=os.path.dirname(path))  # inside the checkpoint's folder: same file system
    tmp = os.path.join(folder, "checkpoint.tmp")
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    os.rmdir(folder)


if __name__ == "__main__":
    os.environ["BARRIERLAB_LIVE"] = "0"
    verdict = check_save_atomically(save_atomically, quiet=True)
    print(verdict)
    if str(verdict).startswith("✓"):
        print("held")
        sys.exit(0)
    print("BROKEN: an atomic save through a temporary folder inside the checkpoint's folder is rejected")
    sys.exit(1)
