"""Promise: the ledger (printed after the diagnosis) is true about which ranks made which calls in which group.
Programs: learner/p11 makes both pair groups [0, 1] and [2, 3] on every rank, but in a thread pool whose threads'
order differs per rank (rank 0 makes [0, 1] first, rank 1 makes [2, 3] first); torch names groups by a per-process
counter, so ranks 0 and 3 end up in one group and ranks 1 and 2 in another: every rank finishes and every
all_reduce returns 3.0 (0+3, 1+2) instead of 1.0 / 5.0. learner/p02: rank 0 alone makes new_group([0]); ranks 2
and 3's all_reduce on their all-rank group lands in the group named like rank 0's. Checks (3 runs each): a ledger
table headed "subgroup of ranks [a, b]" lists only columns of ranks a, b. (p11's printed sums are shown, not
checked: the diagnosis names new_group #1's different member lists and says "This run finished, by chance".)"""

import re

from _h import Workdir, cli, verdict

broken = []
for prog in ("p11_groups_in_threads.py", "p02_rank0_only_group.py"):
    for i in range(3):
        with Workdir() as wd:
            rc, out, err = cli(prog, n=4, timeout=3, cwd=wd, wall=60)
        lines = (out + err).splitlines()
        sums = [ln for ln in lines if ln.startswith("sum ")]
        print(f"[{prog} run {i + 1}] rc={rc} printed: {sums}")
        for k, ln in enumerate(lines):
            m = re.match(r"subgroup of ranks \[([\d, ]+)\]", ln)
            if m and k + 1 < len(lines):
                said = {int(x) for x in m.group(1).split(",")}
                cols = {int(x) for x in re.findall(r"rank (\d+)", lines[k + 1])}
                print(f"   {ln}\n   {lines[k + 1]}")
                if not cols <= said:
                    broken.append(f"{prog} run {i + 1}: ledger table '{ln}' has columns of ranks {sorted(cols)}")
verdict(broken)
