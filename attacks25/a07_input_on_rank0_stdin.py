"""Promise (reference: 'barrierlab run train.py -n 4' stands in for 'torchrun --standalone --nproc-per-node 4
train.py'; one difference remains: a rank's stdin is /dev/null) and the diagnosis's advice fits the program.
Program (learner/p10): rank 0 asks `input("Resume from checkpoint? [y/N] ")`, then every rank calls
dist.barrier(). Under torchrun, given 'y' on stdin, rank 0 reads it and every rank passes the barrier. Under
`barrierlab run` (same stdin), rank 0 gets EOFError from the /dev/null stdin barrierlab gives it. Checked: the
diagnosis tells the learner that the EOF comes from barrierlab's stdin (names stdin or /dev/null), rather than
only 'Fix the failing rank first'."""

import os

from _h import LEARNER, PY, Workdir, run, verdict

prog = str(LEARNER / "p10_input_on_rank0.py")
torchrun = os.path.join(os.path.dirname(PY), "torchrun")
broken = []
with Workdir() as wd:
    rc_t, out_t, err_t = run([torchrun, "--standalone", "--nproc-per-node", "2", prog], input="y\n", cwd=wd, timeout=60)
    print(
        f"torchrun, 'y' on stdin: rc={rc_t}; rank output: {[ln for ln in out_t.splitlines() if 'resume' in ln.lower()]}"
    )
    rc_b, out_b, err_b = run(
        [PY, "-m", "barrierlab", "run", prog, "-n", "2", "--timeout", "3"], input="y\n", cwd=wd, timeout=60
    )
text = out_b + err_b
head = next((ln for ln in text.splitlines() if "failed by itself" in ln or "EOFError" in ln and "raised" in ln), "")
advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
print(f"barrierlab run, 'y' on stdin: rc={rc_b}\n  headline: {head[:300]}\n  {advice[:400]}")
if rc_t == 0 and rc_b != 0 and "stdin" not in text and "/dev/null" not in text:
    broken.append(
        "torchrun passes with 'y' on stdin; barrierlab run fails with EOFError and its diagnosis never says "
        "that barrierlab gives ranks /dev/null as stdin"
    )
verdict(broken)
