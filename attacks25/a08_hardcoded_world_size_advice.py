"""Promise: the diagnosis's advice fits the program. Program (learner/p07): a script copied from a 4-GPU
machine, `dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=4)`, run as
`barrierlab run p07.py -n 2` (the learner has 2 ranks). Under torchrun --nproc-per-node 2 it waits in
init_process_group for ranks 2 and 3 (torch's timeout). barrierlab raises a ValueError in each rank instead.
Checked: the message is about this entry point — a script run by `barrierlab run -n 2` — and not advice for
`bl.run(..., init=False)` ('calls your function as mp.spawn does, fn(rank, *args)'), which the learner did not
use and which this script does not take."""

from _h import Workdir, cli, verdict

broken = []
with Workdir() as wd:
    rc, out, err = cli("p07_hardcoded_world_size.py", n=2, cwd=wd)
text = out + err
msgs = sorted({ln.strip() for ln in text.splitlines() if ln.startswith("ValueError: init_process_group")})
head = next((ln for ln in text.splitlines() if ln.startswith("rank 0 raised ValueError")), "")
print(f"barrierlab run p07 -n 2: rc={rc}")
for m in msgs:
    print("  ", m)
print("  headline:", head[:200])
if any("init=False" in m or "fn(rank, *args)" in m for m in msgs):
    broken.append(
        "the script was run with `barrierlab run -n 2`, the message explains bl.run(init=False)'s "
        "fn(rank, *args) calling convention instead of '-n 2 against world_size=4'"
    )
verdict(broken)
