"""Promise: a diagnosis's headline is true and its advice fits the program. Program (learner/p11, from
pytorch/pytorch#130102): each rank calls dist.new_group() with only the ranks of its own subgroup ([0, 3] on
ranks 0 and 3, [1, 2] on ranks 1 and 2), then dist.barrier(group=grp). torch's new_group docstring
(distributed_c10d.py, 2.13.0): 'requires that all processes in the main group ... enter this function, even if
they are not going to be members of the group. Additionally, groups should be created in the same order in all
processes.' What happens varies from run to run: two ranks stuck in new_group until the deadline, or two ranks
raising 'Connection reset by peer' in the barrier (under torchrun: the latter). Checked in three runs (deadlines
6, 6 and 18 s): whatever the outcome, the advice names new_group (how it must be called); and a rank that raised
inside dist.barrier(group=grp) is not said to have waited 'outside any collective'."""

import re

from _h import Workdir, cli, verdict

broken = []
for deadline in ("6", "6", "18"):
    with Workdir() as wd:
        rc, out, err = cli("p11_new_group_own_ranks.py", timeout=3, extra=("--deadline", deadline), cwd=wd, wall=60)
    text = out + err
    status = [ln.strip() for ln in text.splitlines() if re.match(r"  rank \d: ", ln)][:4]
    head = next((ln for ln in text.splitlines() if "did not finish" in ln), "")
    advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
    print(f"[--deadline {deadline}] rc={rc}")
    for s in status:
        print("   ", s[:160])
    print(f"  headline: {head[:300]}\n  {advice[:300]}")
    stuck = [s for s in status if "stuck in dist.new_group()" in s]
    if rc != 0 and "new_group" not in advice:
        what = f"{len(stuck)} rank(s) stuck in dist.new_group()" if stuck else "ranks raised"
        broken.append(f"deadline {deadline}: {what}; headline '{head[:80]}'; advice: '{advice[:100]}'")
    raised_in_barrier = re.findall(r"rank (\d) raised \w+ at [^;]*p11_new_group_own_ranks.py:11", head)
    if raised_in_barrier and "outside any collective" in head:
        broken.append(
            f"deadline {deadline}: rank(s) {raised_in_barrier} raised in dist.barrier(group=grp) at line 11; "
            "headline says 'outside any collective'"
        )
verdict(broken)
