"""a01: `barrierlab run script.py` never shows the traceback of a rank that raised.

Promise 3: the script runs as `python train.py` / torchrun runs it, with the same output. Python (and every
torchrun worker) prints the uncaught exception's traceback on stderr; `barrierlab run` prints the diagnosis,
whose advice is "Read the traceback (run[rank].traceback)": a Python object a shell user does not have.
"""

import shutil
import sys
import tempfile

from _common import barrierlab_run, plain

SCRIPT = """
def load_config(path):
    return open(path).read()

def main():
    cfg = load_config("missing-config.yaml")   # the real cause, two frames deep

if __name__ == "__main__":
    main()
"""

folder = tempfile.mkdtemp(prefix="a01-")
try:
    with open(f"{folder}/train.py", "w") as f:
        f.write(SCRIPT)
    ref = plain("train.py", cwd=folder)
    assert "Traceback" in ref.stderr and "in main" in ref.stderr, ref.stderr
    got = barrierlab_run("train.py", 2, cwd=folder)
    out = got.stdout + got.stderr
    shown = "Traceback (most recent call last)" in out and "in main" in out
    print("python's stderr:\n" + ref.stderr)
    print("barrierlab run's output:\n" + out)
    if not shown:
        print(
            "BROKEN: python prints the traceback (main -> load_config); barrierlab run shows no traceback, "
            "only 'run[rank].traceback', which a shell user cannot read"
        )
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
