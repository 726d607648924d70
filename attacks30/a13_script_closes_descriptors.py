"""Promise (the brief; docs/reference.md, "Your training script": barrierlab run "stands in for torchrun
--standalone --nproc-per-node 4 train.py"): a program that passes under torchrun passes under barrierlab run and
does the same there.
Attack: a script that, like a daemon library, closes every descriptor above 2 before it starts its group
(os.closerange(3, 4096)), then makes a barrier and an all_reduce. Run under torchrun and under barrierlab run:
exit codes, and what each prints to stderr."""

from _h import run_driver, verdict

SCRIPT = r"""
import os, torch, torch.distributed as dist
os.closerange(3, 4096)
dist.init_process_group("gloo")
dist.barrier()
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} sum {t.item()}")
dist.destroy_process_group()
"""

DRIVER = r"""
import subprocess, sys
tr = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "train.py"],
                    capture_output=True, text=True, timeout=100)
bl = subprocess.run([sys.executable, "-m", "barrierlab", "run", "train.py", "-n", "2", "--timeout", "10"],
                    capture_output=True, text=True, timeout=100)
def errors(text):
    return [l for l in text.splitlines() if "Error" in l or "failed" in l]
print(f"TORCHRUN exit {tr.returncode}; sums: {sorted(l for l in tr.stdout.splitlines() if 'sum' in l)}; error lines: {len(errors(tr.stderr))}")
print(f"BARRIERLAB exit {bl.returncode}; sums: {sorted(l.strip() for l in bl.stdout.splitlines() if 'sum' in l and 'rank' in l)}; error lines: {len(errors(bl.stdout + bl.stderr))}")
for l in errors(bl.stdout + bl.stderr)[:4]:
    print("   barrierlab run printed:", l[:200])
"""

r = run_driver(DRIVER, files={"train.py": SCRIPT}, timeout=200)
r.show()
import re

codes = re.findall(r"(TORCHRUN|BARRIERLAB) exit (-?\d+)", r.out)
d = dict(codes)
verdict(d.get("TORCHRUN") == "0" and d.get("BARRIERLAB") != "0", f"exit codes {d}")
