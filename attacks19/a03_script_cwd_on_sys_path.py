"""a03: `barrierlab run sub/train.py` puts the current folder on the script's sys.path; python and torchrun do not.

Promise 3: same behaviour and exceptions as under torchrun. `python sub/train.py` (each torchrun worker) has
sys.path[0] = sub/ and not the working folder: `import helper` of a module in the working folder raises
ModuleNotFoundError. Under `barrierlab run` it imports, so a script that works here fails under torchrun (and
a module in the working folder can shadow an installed one).
"""

import os
import shutil
import sys
import tempfile

from _common import barrierlab_run, plain

SCRIPT = """
import sys
try:
    import helper_in_cwd
    print("IMPORTED helper_in_cwd")
except ModuleNotFoundError as error:
    print("RAISED", error)
"""

folder = tempfile.mkdtemp(prefix="a03-")
try:
    os.makedirs(f"{folder}/scripts")
    with open(f"{folder}/scripts/train.py", "w") as f:
        f.write(SCRIPT)
    with open(f"{folder}/helper_in_cwd.py", "w") as f:
        f.write("X = 1\n")
    ref = plain("scripts/train.py", cwd=folder)
    got = barrierlab_run("scripts/train.py", 2, cwd=folder)
    print("python:", ref.stdout.strip())
    print("barrierlab run:", [line for line in got.stdout.splitlines() if "helper_in_cwd" in line])
    if "RAISED" in ref.stdout and "IMPORTED helper_in_cwd" in got.stdout:
        print(
            "BROKEN: python raises ModuleNotFoundError (cwd is not on sys.path), barrierlab run's ranks import "
            "the module from the working folder"
        )
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
