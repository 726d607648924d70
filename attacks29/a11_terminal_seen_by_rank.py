"""Promise: `barrierlab run train.py` in a terminal stands in for `torchrun ... train.py` in that terminal, with the
same printed results. Training code chooses what to print by asking whether it writes to a terminal (tqdm's and
rich's progress bars, colour in log formatters, `if sys.stdout.isatty(): bar else: log every N steps`). Both
launchers are started here on a pseudo-terminal. Under torchrun the workers inherit it: isatty() is True on stdout
and stderr. Under `barrierlab run` the ranks write to files and isatty() is False: the script takes its
non-terminal branch and prints something else. (The reference documents stdin being /dev/null; not this.) Exit 0
if the ranks see the same."""

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import sys
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
how = "progress bar" if sys.stdout.isatty() else "plain log lines"
print(f"RESULT rank {rank} stdout tty={sys.stdout.isatty()} stderr tty={sys.stderr.isatty()} -> {how}", flush=True)
dist.destroy_process_group()
"""


def on_pty(cmd, cwd):
    master, slave = pty.openpty()
    p = subprocess.Popen(
        cmd, cwd=cwd, env=_h._env(), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    chunks, end = [], time.monotonic() + 100
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    return p.returncode, sorted(re.findall(r"RESULT (.*?)\r?$", text, re.M))


d = tempfile.mkdtemp(prefix="a29_tty_")
try:
    with open(os.path.join(d, "prog.py"), "w") as f:
        f.write(PROG)
    trc, tr = on_pty([_h.TORCHRUN, "--nproc-per-node=2", "prog.py"], d)
    brc, bl = on_pty([_h.PY, "-m", "barrierlab", "run", "prog.py", "-n", "2"], d)
finally:
    shutil.rmtree(d, ignore_errors=True)
_h.verdict(
    len(tr) == 2 and tr == bl,
    "ranks of a launcher started on a terminal see a terminal",
    torchrun=f"rc={trc}\n" + "\n".join(tr),
    barrierlab=f"rc={brc}\n" + "\n".join(bl),
)
