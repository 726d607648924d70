"""Promise: the diagnosis's advice fixes THAT program. Program learner/p02: rank 0 alone makes a one-member group
for its logging (`if rank == 0: log_group = dist.new_group([0])`), then every rank makes a gloo group of all
ranks. torch: new_group names groups by a per-process counter, so rank 0's all-rank group is its 2nd while the
others' is their 1st; the run hangs. barrierlab says "new_group #1 was asked for different members ... rank 0
passed [0] and ranks 1-3 passed [0, 1, 2, 3]" and advises `dist.new_subgroups_by_enumeration([[0], [0, 1, 2, 3]])`.
torch's new_subgroups_by_enumeration raises ValueError("Rank 0 has appeared in both subgroup ...") for lists
that overlap (distributed_c10d.py, 2.13.0). This script runs the buggy program, takes the advice's first code
span, runs a program that does just that after init_process_group, and checks that it finishes."""

import re

from _h import LEARNER, Workdir, cli, verdict

broken = []
with Workdir() as wd:
    rc, out, err = cli("p02_rank0_only_group.py", timeout=3, cwd=wd, wall=60)
text = out + err
advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
print(f"[buggy] rc={rc}\n  {advice}")
code = re.findall(r"`([^`]*new_subgroups_by_enumeration[^`]*)`", advice)
if not code:
    print("the advice names no new_subgroups_by_enumeration call; nothing to try")
else:
    fixed = LEARNER / "p02_fixed_by_advice.py"
    fixed.write_text(
        "import torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group('gloo')\n"
        f"    {code[0]}\n    dist.barrier()\n    print('fixed ok')\n    dist.destroy_process_group()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    try:
        with Workdir() as wd:
            rc2, out2, err2 = cli(fixed.name, timeout=3, cwd=wd, wall=60)
    finally:
        fixed.unlink()
    err_line = next((ln for ln in (out2 + err2).splitlines() if "Error:" in ln), "")
    print(f"[the advice's code: {code[0]}] rc={rc2}\n  {err_line}")
    if rc2 != 0:
        broken.append(f"the advised `{code[0]}` does not run: rc={rc2}, {err_line.strip()[:200]}")
if "only rank 0" not in text and "only on rank 0" not in text and "rank 0 alone" not in text:
    print("note: nothing says rank 0 made a group the others never made")
verdict(broken)
