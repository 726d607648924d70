"""Promise 3 (a script that passes under torchrun passes under `barrierlab run`, same output): the script's
`__builtins__`.

In `python train.py` (so in every torchrun worker) `__builtins__` in `__main__` is the builtins module; scripts
use it, e.g. to silence print on the non-main ranks: `__builtins__.print = lambda *a, **k: None`. Under
`barrierlab run` the script's module gets `__builtins__` = a dict (_rank.run_script:
`module.__builtins__ = __builtins__`, which in a module other than __main__ is the builtins' dict), so that line
raises AttributeError: 'dict' object has no attribute 'print' on rank 1, and the run fails. (`__loader__` is None
too, where python gives a SourceFileLoader, and `__cached__`/`__annotations__` are missing.)"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cmp import barrierlab_run, torchrun  # noqa: E402

SCRIPT = """\
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() != 0:
    __builtins__.print = lambda *args, **kwargs: None  # only rank 0 prints
print("hello from rank", dist.get_rank())
dist.barrier()
"""


def main():
    folder = tempfile.mkdtemp()
    try:
        with open(os.path.join(folder, "train.py"), "w") as f:
            f.write(SCRIPT)
        t_rc, t_out, _ = torchrun("train.py", 2, folder)
        b_rc, b_out, _ = barrierlab_run("train.py", 2, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"torchrun exit status {t_rc}; barrierlab run exit status {b_rc}")
    if t_rc != b_rc:
        print("BROKEN: the exit status differs; barrierlab run said:")
        print("\n".join(b_out.splitlines()[:3]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
