"""Promise 3 (same exit status as torchrun): a script whose atexit handler ends the process with os._exit(0)
(a known workaround that skips the interpreter's teardown, where process groups can hang).

torchrun exits 0; `barrierlab run script.py -n 2` reports both ranks "exited with code 0 before returning from
the function" and exits 1. _rank.run_script puts the real os._exit back in its `finally:` before
finish_like_exit() runs the atexit handlers, so the handler's os._exit writes no outcome."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cmp import barrierlab_run, torchrun  # noqa: E402

SCRIPT = """\
import atexit, os
import torch.distributed as dist

atexit.register(lambda: os._exit(0))  # skip the interpreter's teardown
dist.init_process_group("gloo")
dist.barrier()
print("rank", dist.get_rank(), "done", flush=True)
"""


def main():
    folder = tempfile.mkdtemp()
    try:
        with open(os.path.join(folder, "train.py"), "w") as f:
            f.write(SCRIPT)
        t_rc, _, _ = torchrun("train.py", 2, folder)
        b_rc, b_out, _ = barrierlab_run("train.py", 2, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"torchrun exit status {t_rc}; barrierlab run exit status {b_rc}")
    if t_rc != b_rc:
        print("BROKEN: the exit status differs")
        print("\n".join(b_out.splitlines()[:3]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
