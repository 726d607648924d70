"""Promise 3 (same exit status and behaviour as torchrun): a script that forks a helper child.

The script forks before init_process_group; the child ends with `raise SystemExit(7)` (case 1) or an
uncaught ValueError (case 2), the parent checks the child's exit status (7, resp. 1, as python gives) and
goes on to a barrier. Under torchrun both scripts exit 0. Under `barrierlab run` the child, a copy of the rank,
unwinds into barrierlab's rank code (_rank.main), writes the RANK's outcome and ends with os._exit(0 or its
SystemExit code): the rank is reported with the child's end (exited 7 / raised ValueError), and in case 2
the parent sees exit status 0 instead of 1, so the script itself takes another path."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cmp import barrierlab_run, torchrun  # noqa: E402

SCRIPT = """\
import os, sys
pid = os.fork()
if pid == 0:
    print("child working", flush=True)
    {child_end}
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
print("parent saw the child exit with", code, flush=True)
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
sys.exit(0 if code == {expected} else 1)
"""


def main():
    broken = False
    for child_end, expected in (("raise SystemExit(7)", 7), ("raise ValueError('child')", 1)):
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "train.py"), "w") as f:
                f.write(SCRIPT.format(child_end=child_end, expected=expected))
            t_rc, t_out, _ = torchrun("train.py", 2, folder)
            b_rc, b_out, _ = barrierlab_run("train.py", 2, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"child `{child_end}`: torchrun exit status {t_rc}, barrierlab run exit status {b_rc}")
        if t_rc != b_rc:
            broken = True
            print("  barrierlab run said:\n    " + "\n    ".join(b_out.splitlines()[:12]))
    if broken:
        print("BROKEN: a forked child's exit is taken as the rank's outcome")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
