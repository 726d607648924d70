"""Promise 4: a WRONG answer is refused with an explanation (that names what is wrong).

Notebook 02's save_atomically with a real bug: the checkpoint is serialised to memory, written to a temporary
file with one os.write whose short count is ignored, then os.replace'd onto the path. When the OS stops the
write at the file-size limit (the check's kill), os.write returns a short count instead of killing the process,
and the partial file is renamed onto checkpoint.pt: every rank's torch.load then fails. The check refuses it,
but says "rank 0 was not killed ... does save(obj, path) write the checkpoint, on rank 0 alone, without
collectives of its own?" -- nothing about the partial checkpoint it left in place, which is the bug.
Exits 0 when the refusal names the partial/truncated checkpoint (or the short write), 1 otherwise.
"""

import io
import os
import sys

import torch

from barrierlab.exercises.nb02 import check_save_atomically


def save_atomically(obj, path):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    tmp = path + ".part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, buffer.getvalue())  # the bug: a short write is not retried
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, path)


def main() -> int:
    verdict = check_save_atomically(save_atomically, quiet=True, seed=3)
    print(verdict)
    text = str(verdict).lower()
    if verdict.ok:
        print("BROKEN: a save that renames a partial file into place was accepted")
        return 1
    if not any(word in text for word in ("partial", "truncat", "short", "incomplete")):
        print("BROKEN: refused, but the explanation does not name the partial checkpoint it left")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
