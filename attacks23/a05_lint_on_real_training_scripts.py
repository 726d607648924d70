"""Promise (docs/reference.md, `barrierlab lint`: it knows the frameworks' collectives, DDP's forward/backward,
"and the idioms that are not rank-dependent"; 0 = nothing found): measured on code we did not write. lint_real/
correct/ holds 10 small reproductions of published training scripts (nanoGPT, torchtitan, Lightning Fabric x3,
pytorch/examples imagenet, timm, DeepSpeedExamples, HF transformers run_clm_no_trainer, fairseq; each names its
source and commit), correct as published; lint_real/planted/ the same files with one realistic barrier/collective
bug each (lines marked `# PLANTED`). Counts: correct files lint reports something in (false alarms), and planted
bugs lint reports at a marked line. Held if no correct file gets a finding (the planted count is reported only)."""

import os
import re
import subprocess
import sys

from _common import PY, env

HERE = os.path.dirname(os.path.abspath(__file__))
CORRECT = os.path.join(HERE, "lint_real", "correct")
PLANTED = os.path.join(HERE, "lint_real", "planted")
FINDING = re.compile(r"^\S+?\.py:(\d+): (.*?) \[([a-z-]+)\]$")
CONDITION = re.compile(r"^\s+condition: .*\(line (\d+)\)")


def lint(path):
    p = subprocess.run([PY, "-m", "barrierlab", "lint", path], capture_output=True, text=True, env=env(), timeout=60)
    findings = []
    for line in p.stdout.splitlines():
        m = FINDING.match(line)
        if m:
            findings.append([int(m.group(1)), m.group(2), m.group(3), None])
        m = CONDITION.match(line)
        if m and findings:
            findings[-1][3] = int(m.group(1))
    return p.returncode, findings


names = sorted(f for f in os.listdir(CORRECT) if f.endswith(".py"))
false_alarm_files, alarms, found = [], 0, []
print("correct copies (as published):")
for name in names:
    rc, fs = lint(os.path.join(CORRECT, name))
    if fs:
        false_alarm_files.append(name)
        alarms += len(fs)
    print(
        f"  {name}: rc={rc} " + ("; ".join(f"line {l} {what} [{kind}]" for l, what, kind, _ in fs) or "nothing found")
    )
print("planted copies (one bug each):")
for name in names:
    path = os.path.join(PLANTED, name)
    with open(path) as f:
        marked = {i for i, line in enumerate(f, 1) if "# PLANTED" in line and not line.lstrip().startswith("#")}
    rc, fs = lint(path)
    hit = [(l, what, kind) for l, what, kind, cond in fs if l in marked or cond in marked]
    if hit:
        found.append(name)
    print(f"  {name}: {'FOUND' if hit else 'missed'} " + "; ".join(f"line {l} {w} [{k}]" for l, w, k in hit))
print(
    f"\nfalse alarms: {len(false_alarm_files)} of {len(names)} correct files ({alarms} findings): {false_alarm_files}"
)
print(f"planted bugs found: {len(found)} of {len(names)}; missed: {sorted(set(names) - set(found))}")
sys.exit(1 if false_alarm_files else 0)
