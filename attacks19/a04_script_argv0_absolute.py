"""a04: `barrierlab run train.py` gives the script sys.argv[0] = '/abs/path/train.py'; python and torchrun give
'train.py', as typed.

Promise 3: same sys.argv as under torchrun (docs/reference.md: "the ranks do what `python train.py` does";
stdin is named as the one difference). A script printing or logging its command line prints something else.
"""

import shutil
import sys
import tempfile

from _common import barrierlab_run, plain

SCRIPT = 'import sys\nprint("ARGV", sys.argv)\n'

folder = tempfile.mkdtemp(prefix="a04-")
try:
    with open(f"{folder}/train.py", "w") as f:
        f.write(SCRIPT)
    ref = plain("train.py", "--lr", "0.1", cwd=folder)
    got = barrierlab_run("train.py", 2, "--lr", "0.1", cwd=folder)
    want = ref.stdout.strip()
    seen = sorted({line.strip() for line in got.stdout.splitlines() if line.startswith("ARGV")})
    print("python:", want)
    print("barrierlab run:", seen)
    if seen != [want]:
        print("BROKEN: sys.argv differs from python's (and torchrun's, which runs `python -u train.py ...`)")
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
