"""Promise (docs/torchrun.md: report reads a record folder "as untrusted input"; docs/reference.md: control
characters "are shown escaped (\x0d, \x1b) so that a rank's output cannot move the cursor or rewrite the ...
display").
Attack: records of a real torchrun job (2 ranks, an uneven loop) edited by hand: the file name of every call becomes
"/x<ESC>]0;PWNED<BEL><ESC>[2J/loop.py" (set the terminal's title, clear the screen), the function name carries
<ESC>[31m, the error message <ESC>[2J. Does `barrierlab report` print any raw control character?"""

from _h import run_driver, verdict

MODULE = r"""
import torch, torch.distributed as dist
from barrierlab.torchrun import main

def body():
    rank = dist.get_rank()
    for i in range(2 + (rank == 0)):
        dist.barrier()
    t = torch.ones(1)
    dist.all_reduce(t)
    return rank

if __name__ == "__main__":
    main(body)
"""

DRIVER = r"""
import os, re, subprocess, sys
env = dict(os.environ, BARRIERLAB_RECORD_DIR=os.path.abspath("records"), BARRIERLAB_TIMEOUT="3")
job = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                      "loop.py"], env=env, capture_output=True, text=True, timeout=100)
print("torchrun job exit code", job.returncode)
here = os.path.abspath("loop.py")
for name in os.listdir("records"):
    path = os.path.join("records", name)
    text = open(path).read()
    text = text.replace(here, "/x\\u001b]0;PWNED\\u0007\\u001b[2J/loop.py").replace('"func":"body"', '"func":"bo\\u001b[31mdy"')
    text = text.replace("Timed out waiting", "\\u001b[2JTimed out waiting")
    open(path, "w").write(text)
for extra in ([], ["--races"]):
    rep = subprocess.run([sys.executable, "-m", "barrierlab", "report", "records", *extra], capture_output=True, timeout=60)
    raw = sum(rep.stdout.count(bytes([c])) + rep.stderr.count(bytes([c])) for c in (0x1b, 0x07))
    esc = rep.stdout.count(b"\\x1b")
    print(f"report {extra} exit {rep.returncode}: raw ESC/BEL bytes in its output: {raw}; escaped forms: {esc}")
    print(rep.stdout.decode(errors="replace")[:700])
"""

r = run_driver(DRIVER, files={"loop.py": MODULE}, timeout=200)
r.show()
import re

raws = [int(x) for x in re.findall(r"raw ESC/BEL bytes in its output: (\d+)", r.out)]
verdict(len(raws) != 2 or any(raws), f"raw control bytes printed by report: {raws}")
