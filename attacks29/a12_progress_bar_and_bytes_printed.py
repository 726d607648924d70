"""Promise: `barrierlab run` prints what the script printed, as torchrun does. A script draws a progress bar the
way tqdm does (carriage returns redrawing one line), colours one word with an ANSI code, and writes a few raw bytes
(a binary payload on stdout.buffer, e.g. piped output). torchrun passes the bytes through. `barrierlab run` shows
each carriage return as the four characters "\\x0d", ESC as "\\x1b", and bytes that are not UTF-8 as U+FFFD (its
_protocol.terminal_text, a defence against hostile output that the reference does not mention): the bar becomes a
long line of "\\x0d" and NUL shows as "\\x00" (the harness decodes torchrun's bytes with replacement too, so
the non-UTF-8 bytes are not what differs here). Checked: each rank's stdout bytes under torchrun against the same rank's
section under barrierlab run. Exit 0 if they are the same."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = r"""
import sys
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    for i in range(0, 101, 25):
        sys.stdout.write(f"\rtrain: {i:3d}%|{'#' * (i // 10):10s}|")
        sys.stdout.flush()
    sys.stdout.write("\n")
    print("loss \x1b[32m0.125\x1b[0m")
    sys.stdout.flush()
    sys.stdout.buffer.write(b"payload:\x00\xff\xfe\n")
    sys.stdout.flush()
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG)
want = (
    "\rtrain:   0%|          |\rtrain:  25%|##        |\rtrain:  50%|#####     |\rtrain:  75%|#######   |"
    "\rtrain: 100%|##########|\nloss \x1b[32m0.125\x1b[0m\npayload:\x00\ufffd\ufffd\n"
)
m = re.search(r"--- rank 0 ---\n(.*?)(?=\n--- rank|\n\nAll 2 ranks|\Z)", bl["out"], re.S)
shown = (m.group(1) + "\n") if m else "(no rank 0 section)"
tr_ok = tr["out"] == want  # torchrun: exactly the bytes (decoded with replace here too)
_h.verdict(
    tr_ok and shown == want,
    "progress bar, colour and bytes printed by rank 0",
    torchrun=repr(tr["out"]),
    barrierlab=repr(shown),
)
