"""Promise 4 (the diagnosis is right), under torchrun with a named record folder used twice: docs/torchrun.md's
own command, `BARRIERLAB_RECORD_DIR=records/demo torchrun ... -m barrierlab.scenarios.barrier_on_rank0`, run
once with 4 ranks and then again with 2.

The second job prints no diagnosis: the first job's `diagnosis.claimed` (_protocol.claim_diagnosis, O_EXCL)
is still in the folder, so no failing rank of the second job may print one (docs: "one failing rank per folder
prints the diagnosis and collective ledger"). And `barrierlab report` on the folder reports a 4-rank run: the
second job's ranks 0 and 1 together with ranks 2 and 3 of the first job (collect.from_records takes every
rank file in the folder and the largest world size any outcome claims)."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _run(cmd, env, cwd):
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out = proc.communicate(timeout=150)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the session made for it
        out = proc.communicate()[0]
        return 124, out
    return proc.returncode, out


def main():
    top = tempfile.mkdtemp()
    try:
        records = os.path.join(top, "records", "demo")
        env = {**os.environ, "PYTHONPATH": SRC, "BARRIERLAB_RECORD_DIR": records}
        printed = {}
        for n in (4, 2):
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}"]
            rc, out = _run(cmd + ["-m", "barrierlab.scenarios.barrier_on_rank0"], env, top)
            printed[n] = "diagnosis of the ranks recorded in" in out
            print(f"torchrun with {n} ranks: exit status {rc}, diagnosis printed: {printed[n]}")
        env.pop("BARRIERLAB_RECORD_DIR")
        rc, out = _run([sys.executable, "-m", "barrierlab", "report", records], env, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    first = out.splitlines()[0] if out else ""
    print("barrierlab report:", first)
    ranks = re.match(r"Run\((\d+) ranks", first)
    broken = False
    if printed.get(4) and not printed.get(2):
        print("BROKEN: the second job's failure printed no diagnosis")
        broken = True
    if ranks and int(ranks.group(1)) != 2:
        print(f"BROKEN: report shows a {ranks.group(1)}-rank run for the folder's last (2-rank) job")
        broken = True
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
