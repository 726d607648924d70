"""a10: a training module with a relative import, run as `torchrun -m pkg.train` (or `python -m pkg.train`),
cannot be run by `barrierlab run`: there is no `-m`, and the file path fails.

Promise 3: a program that passes under torchrun passes under `barrierlab run`. `python -m pkg.train` runs it
as __main__ of package `pkg` (`from . import helper` works; torchrun -m does the same). `barrierlab run -m
pkg.train -n 2` is refused ("unrecognized arguments: -m"), and `barrierlab run pkg/train.py -n 2` runs the file
without its package: every rank raises "ImportError: attempted relative import with no known parent package".
"""

import os
import shutil
import subprocess
import sys
import tempfile

from _common import PY, barrierlab_run, env

folder = tempfile.mkdtemp(prefix="a10-")
try:
    os.makedirs(f"{folder}/pkg")
    open(f"{folder}/pkg/__init__.py", "w").close()
    with open(f"{folder}/pkg/helper.py", "w") as f:
        f.write("X = 42\n")
    with open(f"{folder}/pkg/train.py", "w") as f:
        f.write("from . import helper\nprint('TRAINED', helper.X, __name__, __package__)\n")
    ref = subprocess.run([PY, "-m", "pkg.train"], cwd=folder, capture_output=True, text=True, timeout=60, env=env())
    print("python -m pkg.train:", ref.returncode, ref.stdout.strip())
    assert ref.returncode == 0 and "TRAINED 42" in ref.stdout
    as_module = subprocess.run(
        [PY, "-m", "barrierlab", "run", "-m", "pkg.train", "-n", "2"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=200,
        env=env(),
    )
    as_file = barrierlab_run("pkg/train.py", 2, cwd=folder)
    print("barrierlab run -m pkg.train:", as_module.returncode, as_module.stderr.strip()[-200:])
    print(
        "barrierlab run pkg/train.py:",
        as_file.returncode,
        [line for line in as_file.stdout.splitlines() if "raised" in line][:1],
    )
    if as_module.returncode != 0 and (as_file.returncode != 0 or "TRAINED 42" not in as_file.stdout):
        print("BROKEN: a module torchrun -m (and python -m) runs cannot be run by barrierlab run in any form")
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
