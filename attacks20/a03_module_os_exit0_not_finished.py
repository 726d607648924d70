"""Promise 3 (same exit status as torchrun): `barrierlab run -m pkg.mod` where the module ends with os._exit(0).

`torchrun -m pkg.mod` exits 0; `barrierlab run -m pkg.mod -n 2` reports both ranks "exited with code 0
before returning from the function" and exits 1. `barrierlab run script.py` handles a script's os._exit
(_rank.run_script replaces os._exit); _rank.run_module does not."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cmp import barrierlab_run, torchrun  # noqa: E402

MODULE = """\
import os
import torch.distributed as dist

dist.init_process_group("gloo")
dist.barrier()
print("rank", dist.get_rank(), "done", flush=True)
os._exit(0)
"""


def main():
    folder = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(folder, "pkg"))
        open(os.path.join(folder, "pkg", "__init__.py"), "w").close()
        with open(os.path.join(folder, "pkg", "train.py"), "w") as f:
            f.write(MODULE)
        t_rc, _, _ = torchrun("pkg.train", 2, folder, module=True)
        b_rc, b_out, b_err = barrierlab_run("pkg.train", 2, folder, module=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"torchrun -m exit status {t_rc}; barrierlab run -m exit status {b_rc}")
    if t_rc != b_rc:
        print("BROKEN: the exit status differs")
        print(b_out[:600])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
