"""Promise (docs/torchrun.md "A folder you did not write", the prompt's item 3): `barrierlab report FOLDER` reads a
record folder as untrusted input and must not claim what the files do not show. Attack: two torchrun jobs of
lesson scenarios (a 4-rank extra_barrier job and a 2-rank barrier_on_rank0 job), then folders edited as people do:
(a) rank 1's files replaced by rank 1's files of the 2-rank job (its outcome says world_size 2); (b) a stray copy
of rank 3's files saved as rank5.* (its outcome says rank 3, world_size 4). Also truncated/garbage lines (must not
crash). Held if report ends without a traceback, and (a) says that rank 1's record is of another world size, and
(b) does not make up a 6-rank run with a rank 4 that "ended without a report" when every outcome says 4 ranks."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from _common import PY, env

TORCHRUN = os.path.join(os.path.dirname(PY), "torchrun")
work = tempfile.mkdtemp(prefix="a23-report-")
problems = []
try:

    def job(scenario, n):
        folder = os.path.join(work, scenario)
        subprocess.run(
            [TORCHRUN, "--standalone", f"--nproc-per-node={n}", "-m", f"barrierlab.scenarios.{scenario}"],
            env=env(BARRIERLAB_RECORD_DIR=folder, BARRIERLAB_TIMEOUT="3"),
            capture_output=True,
            timeout=100,
            cwd=work,
        )
        return folder

    four, two = job("extra_barrier", 4), job("barrier_on_rank0", 2)

    def report(folder, *extra):
        t = time.monotonic()
        p = subprocess.run(
            [PY, "-m", "barrierlab", "report", folder, *extra],
            env=env(),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=work,
        )
        took = time.monotonic() - t
        if "Traceback" in p.stderr or p.returncode not in (0, 1) or took > 20:
            problems.append(
                f"report {os.path.basename(folder)} {extra}: rc={p.returncode} {took:.1f}s {p.stderr[-800:]}"
            )
        return p.stdout

    def variant(name, edit):
        folder = os.path.join(work, name)
        shutil.copytree(four, folder)
        edit(folder)
        return folder

    a = variant(
        "mixed",
        lambda f: [shutil.copy(os.path.join(two, n), os.path.join(f, n)) for n in ("rank1.events", "rank1.outcome")],
    )
    out_a = report(a)
    print("(a) rank 1 from a 2-rank job:\n" + "\n".join(out_a.splitlines()[:8]))
    if not any(
        w in out_a
        for w in ("world_size", "world size", "of 2 ranks", "2-rank", "another job", "another run", "other job")
    ):
        problems.append(
            "(a) rank1.outcome says world_size 2, the others 4: the report treats it as rank 1 of this 4-rank run and says nothing"
        )

    def stray(f):
        shutil.copy(os.path.join(f, "rank3.events"), os.path.join(f, "rank5.events"))
        shutil.copy(os.path.join(f, "rank3.outcome"), os.path.join(f, "rank5.outcome"))

    b = variant("stray", stray)
    out_b = report(b)
    print("(b) stray rank5.* copied from rank3.*:\n" + "\n".join(out_b.splitlines()[:10]))
    if "6 ranks" in out_b or "rank 4" in out_b:
        problems.append(
            "(b) every outcome says world_size 4, yet the report shows a 6-rank run and a rank 4 no file names"
        )

    def truncate(f):
        with open(os.path.join(four, "rank2.events"), "rb") as src:
            data = src.read()
        with open(os.path.join(f, "rank2.events"), "wb") as dst:
            dst.write(data[: len(data) // 2])
        with open(os.path.join(f, "rank1.events"), "a") as dst:
            dst.write('{"id":99,"kind":"collective","name":"barrier","t":"x"}\n{"id":\n')

    c = variant("truncated", truncate)
    report(c)
    report(c, "--races")
    report(c, "--timeline", os.path.join(work, "t.png"))
    report(a, "--races")
    report(b, "--timeline", os.path.join(work, "t2.png"))
finally:
    shutil.rmtree(work, ignore_errors=True)

print("\n".join(problems) or "held")
sys.exit(1 if problems else 0)
