"""Promise: the diagnosis headline is true and its advice fixes THAT program (reference: "ranks that ask the same
new_group call for different members are told so"). Program learner/p01: each rank builds both pair groups on
every rank (as torch asks), but lists its own pair "itself first" and passes sort_ranks=False (torch 2.13's
new_group): rank 0 asks [0, 1], rank 1 asks [1, 0]. torch (_new_group_with_tag): with sort_ranks=False the list is
kept as given and group_rank = ranks.index(global_rank), so ranks 0 and 1 both claim group rank 0 of one group and
the gloo rendezvous never completes. Control: the same program with sort_ranks=True finishes.
Checks: the buggy run does not finish even with a 20 s deadline (a real hang); its diagnosis must not call the
stuck ranks "still busy, not missing" nor advise a longer deadline, and should say the members' ORDER differed.
"""

from _h import Workdir, cli, section, verdict

broken = []
with Workdir() as wd:
    rc, out, err = cli("p01_sort_ranks_false.py", timeout=3, cwd=wd, args=("sorted",), wall=60)
print(f"[control sort_ranks=True] rc={rc}")
print("\n".join(out.splitlines()[:6]))
if rc != 0:
    broken.append(f"control (sort_ranks=True) did not finish: rc={rc}")
for deadline in ("20", "8"):
    with Workdir() as wd:
        rc, out, err = cli("p01_sort_ranks_false.py", timeout=3, extra=("--deadline", deadline), cwd=wd, wall=60)
    text = out + err
    diag = section(text, "ranks ") or section(text, "rank ") or text
    head = next(
        (ln for ln in text.splitlines() if ln and not ln.startswith((" ", "Run(", "[rank")) and "rank" in ln), ""
    )
    advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
    print(f"[sort_ranks=False, --deadline {deadline}] rc={rc}\n  headline: {head}\n  advice: {advice}")
    if rc == 0:
        print("  (finished)")
        continue
    if "still busy" in head or "not missing" in head:
        broken.append(f"deadline {deadline}: headline says the hung ranks were 'still busy, not missing': {head[:160]}")
    if "longer `deadline`" in advice or "raise `deadline`" in advice:
        broken.append(f"deadline {deadline}: advice is a longer deadline for a hang caused by sort_ranks=False order")
    if "sort_ranks" not in text and "order" not in head:
        broken.append(
            f"deadline {deadline}: nothing says the members were listed in different orders with sort_ranks=False"
        )
verdict(broken)
