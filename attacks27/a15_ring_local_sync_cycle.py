"""Promise: the headline is true, names the right line and ranks, and the advice fits. Program learner/p15
(3 ranks): each rank makes new_group([rank, right], use_local_synchronization=True) (line 10), then the one with its
left neighbour (line 11). torch's new_group docstring: "use_local_synchronization=True can lead to deadlocks when
each rank creates multiple overlapping process groups ... make sure all ranks follow the same global creation
order": rank 0 waits for 1 in [0, 1], 1 for 2 in [1, 2], 2 for 0 in [0, 2]. Checks (3 runs): the headline
describes that cycle at line 10 with the three groups; the advice asks for one order of group calls on every
rank, and is not "raise the deadline"."""

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p15_ring_local_sync.py", n=3, timeout=3, cwd=wd, wall=60)
    lines = (out + err).splitlines()
    head = next(
        (
            ln
            for ln in lines
            if ln.startswith("A cycle") or (ln and not ln.startswith((" ", "[", "Run(", "-")) and "rank" in ln)
        ),
        "",
    )
    advice = next((ln for ln in lines if ln.startswith("What to do:")), "")
    print(f"[run {i + 1}] rc={rc}\n  headline: {head[:400]}\n  advice: {advice[:200]}")
    want = ["ranks [0, 1]", "ranks [1, 2]", "ranks [0, 2]", "p15_ring_local_sync.py:10"]
    if not head.startswith("A cycle") or not all(w in head for w in want):
        broken.append(
            f"run {i + 1}: headline does not describe the cycle over [0,1], [1,2], [0,2] at line 10: {head[:200]}"
        )
    if "order the groups' calls the same way" not in advice or "longer `deadline`" in advice:
        broken.append(f"run {i + 1}: advice does not ask for one order: {advice[:200]}")
verdict(broken)
