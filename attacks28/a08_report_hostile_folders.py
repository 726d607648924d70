"""a08 — `barrierlab report FOLDER` (with --races and --timeline) on hostile folders: the folder itself a FIFO, a
symlink to /dev/zero, a file; a record folder (made by barrierlab.torchrun.main for one rank, on a HashStore: no
socket) whose rank0.events is replaced by a FIFO, a link to /dev/zero, 200 MB on one line, random bytes; events
lines with a non-string path; a rank file named for rank 10**9; an outcome that is /dev/zero or garbage.
Promise (report --help, torchrun.md): every file in the folder is untrusted input: only regular rank files of
bounded size are read; a FIFO cannot make report hang. Expected: exit 0/1/2 with a message, no traceback, within
30 s."""

import json
import os
import random
import shutil
import tempfile

from _h import PY, env, finish, run

MAKE = r"""
import functools, os, sys
import torch.distributed as dist
orig = dist.init_process_group
dist.init_process_group = lambda backend, timeout=None, **kw: orig(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
from barrierlab import torchrun
def fn():
    import torch
    dist.barrier()
    with open(os.environ["A28_FILE"], "w") as f:
        f.write("x")
    t = torch.ones(1); dist.all_reduce(t)
    return 1
torchrun.main(fn, [])
"""

work = tempfile.mkdtemp(prefix="a28-rep-")
broken = []
try:
    base = os.path.join(work, "base")
    os.mkdir(base)
    mk = os.path.join(work, "make.py")
    with open(mk, "w") as f:
        f.write(MAKE)
    e = env(
        BARRIERLAB_RECORD_DIR=base,
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        GLOO_SOCKET_IFNAME="lo",
        A28_FILE=os.path.join(work, "data.txt"),
    )
    rc, out, err, secs = run([PY, mk], timeout=90, cwd=work, env_=e)
    print("made records:", rc, sorted(os.listdir(base)), err.strip()[-200:])
    assert rc == 0 and "rank0.outcome" in os.listdir(base), (rc, err[-2000:])

    def variant(name, change):
        d = os.path.join(work, name)
        shutil.copytree(base, d, symlinks=True)
        change(d)
        return d

    def events(d):
        return os.path.join(d, "rank0.events")

    def replace(path, how):
        os.unlink(path)
        how(path)

    def giant(p):
        with open(p, "wb") as f:
            for _ in range(200):
                f.write(b"{" * (1 << 20))

    def garbage(p):
        with open(p, "wb") as f:
            f.write(random.Random(1).randbytes(5 << 20))

    def nonstr_path(d):
        with open(events(d), "a") as f:
            f.write(
                json.dumps(
                    {
                        "id": 50,
                        "kind": "file",
                        "name": "read",
                        "t": 1e9,
                        "end": 1e9,
                        "path": 12,
                        "file": "x.py",
                        "line": 1,
                        "func": "f",
                    }
                )
                + "\n"
            )
            f.write(
                json.dumps(
                    {
                        "id": 51,
                        "kind": "file",
                        "name": "write",
                        "t": 1e9,
                        "end": 1e9,
                        "path": ["a"],
                        "file": "x.py",
                        "line": 2,
                        "func": "f",
                    }
                )
                + "\n"
            )

    def huge_rank(d):
        open(os.path.join(d, "rank1000000000.events"), "w").close()
        open(os.path.join(d, "rank999999999999999999999.outcome"), "w").close()

    def nested_json(d):
        with open(events(d), "a") as f:
            f.write("[" * 100000 + "]" * 100000 + "\n")
            f.write(
                '{"id": 60, "kind": "collective", "name": "barrier", "t": 1, "seq": 9, "pos": 9, "file": '
                + "[" * 5000
                + "]" * 5000
                + "}\n"
            )

    folders = {
        "folder is a FIFO": lambda: (os.mkfifo(os.path.join(work, "fifo")), os.path.join(work, "fifo"))[1],
        "folder -> /dev/zero": lambda: (
            os.symlink("/dev/zero", os.path.join(work, "zero")),
            os.path.join(work, "zero"),
        )[1],
        "folder is a file": lambda: (open(os.path.join(work, "file"), "w").close(), os.path.join(work, "file"))[1],
        "empty folder": lambda: (os.mkdir(os.path.join(work, "empty")), os.path.join(work, "empty"))[1],
        "control": lambda: variant("control", lambda d: None),
        "events is a FIFO": lambda: variant("evfifo", lambda d: replace(events(d), os.mkfifo)),
        "events -> /dev/zero": lambda: variant(
            "evzero", lambda d: replace(events(d), lambda p: os.symlink("/dev/zero", p))
        ),
        "events 200 MB one line": lambda: variant("evgiant", lambda d: giant(events(d))),
        "events random bytes": lambda: variant("evgarbage", lambda d: garbage(events(d))),
        "events with a path that is not a string": lambda: variant("evpath", nonstr_path),
        "rank files of rank 10**9": lambda: variant("hugerank", huge_rank),
        "events deeply nested JSON": lambda: variant("nested", nested_json),
        "outcome -> /dev/zero": lambda: variant(
            "outzero", lambda d: replace(os.path.join(d, "rank0.outcome"), lambda p: os.symlink("/dev/zero", p))
        ),
        "outcome random bytes": lambda: variant("outgarbage", lambda d: garbage(os.path.join(d, "rank0.outcome"))),
    }
    for name, make in folders.items():
        folder = make()
        for extra in ([], ["--races", "--timeline", os.path.join(work, "t.png")]):
            rc, out, err, secs = run([PY, "-m", "barrierlab", "report", folder, *extra], timeout=60, cwd=work)
            ok = rc in (0, 1, 2) and "Traceback" not in err and "Traceback" not in out and secs < 30
            tag = " ".join(extra[:1])
            print(
                ("  " if ok else "XX"),
                f"{name} {tag}: rc={rc} {secs:.1f}s err={err.strip()[-200:]!r} out={out.strip()[:150]!r}",
            )
            if not ok:
                broken.append(f"{name} {tag}: rc={rc} after {secs:.1f} s; stderr: {err.strip()[-700:]}")
finally:
    shutil.rmtree(work, ignore_errors=True)
finish(broken, "barrierlab report on hostile folders")
