"""a02: a script's sys.excepthook never runs under `barrierlab run`.

Promise 3: same behaviour as `python train.py` under torchrun. Python calls sys.excepthook for an uncaught
exception (scripts install one to log the crash, write a crash file, notify); every torchrun worker does it.
Under `barrierlab run` the exception is caught by the rank's machinery and the hook is never called.
"""

import os
import shutil
import sys
import tempfile

from _common import barrierlab_run, plain

SCRIPT = """
import os, sys

def crash_hook(kind, value, tb):
    with open(f"crash-{os.environ.get('RANK', 'python')}.txt", "w") as f:
        f.write(f"{kind.__name__}: {value}")
    sys.__excepthook__(kind, value, tb)

sys.excepthook = crash_hook
raise RuntimeError("diverged at step 7")
"""

folder = tempfile.mkdtemp(prefix="a02-")
try:
    with open(f"{folder}/train.py", "w") as f:
        f.write(SCRIPT)
    ref = plain("train.py", cwd=folder)
    assert os.path.exists(f"{folder}/crash-python.txt"), ref.stderr
    got = barrierlab_run("train.py", 2, cwd=folder)
    made = sorted(n for n in os.listdir(folder) if n.startswith("crash-"))
    print(
        "python wrote:",
        ["crash-python.txt"],
        "| barrierlab run's ranks wrote:",
        [n for n in made if n != "crash-python.txt"],
    )
    if made != ["crash-0.txt", "crash-1.txt", "crash-python.txt"]:
        print(got.stdout[-1500:])
        print(
            "BROKEN: the script's sys.excepthook ran under python (as in every torchrun worker) but not on "
            "barrierlab run's ranks"
        )
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
