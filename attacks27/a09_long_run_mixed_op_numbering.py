"""Promise (long runs, records cut in the middle): the diagnosis is true about what the record holds and about what
it does not. Program learner/p08: 2 ranks, 8,000 all_reduces at line 17; at one step rank 1 passes op=MAX while
rank 0 passes SUM (gloo does not check; every rank finishes). Each rank's record (about 8,000 events) is cut in
the middle (first and last kept). Cases: the odd step in the kept head (step 100 -> all_reduce #101), in the kept
tail (step 7000 -> #7001), and in the dropped middle (step 4000). Checks: in the kept parts the diagnosis names
different reduce ops at the right call number; in the dropped middle it must not say the ranks' calls all agree
without saying that the middle was not read."""

import re

from _h import Workdir, cli, verdict

broken = []
for odd, want in ((100, 101), (7000, 7001), (4000, None)):
    with Workdir() as wd:
        rc, out, err = cli(
            "p08_long_mixed_op.py",
            n=2,
            timeout=5,
            cwd=wd,
            wall=100,
            extra=("--deadline", "80"),
            args=("8000", str(odd)),
        )
    text = out + err
    lines = text.splitlines()
    head = next((ln for ln in lines if ln.startswith(("Ranks passed different", "All 2 ranks"))), "")
    print(f"[odd step {odd}] rc={rc}\n  headline: {head[:400]}")
    if want is not None:
        m = re.search(r"different reduce ops to all_reduce #(\d+)", head)
        if not m:
            broken.append(f"odd step {odd} (kept part): no different-reduce-ops headline: {head[:200]}")
        elif int(m.group(1)) != want:
            broken.append(f"odd step {odd}: headline names all_reduce #{m.group(1)}, the odd call was #{want}")
    else:
        if head.startswith("All 2 ranks") and "cut" not in head and "not kept" not in head and "dropped" not in head:
            broken.append(f"odd step {odd} (dropped middle): '{head[:200]}' without saying the middle was not read")
verdict(broken)
