"""Promise: a diagnosis's headline is true and its advice fits the program. Programs: `dist.barrier()` after
`destroy_process_group()` (learner/p04) and before `init_process_group()` (learner/p05); torch raises
ValueError 'Default process group has not been initialized' from `_get_default_group()` (no group exists; the
barrier takes no arguments). Checked: the diagnosis does not say the barrier 'refused its arguments', does not
count a call on a group that did not exist as a collective call made while the ledger says none were recorded,
and its advice names the destroy/init line (p04 line 8, p05 line 12)."""

from _h import Workdir, blrun, cli, verdict

broken = []
for prog, line_no, what in (
    ("p04_barrier_after_destroy.py", 8, "destroy_process_group"),
    ("p05_barrier_before_init.py", 12, "init_process_group"),
):
    for how in ("barrierlab run", "bl.run"):
        with Workdir() as wd:
            rc, out, err = (cli if how == "barrierlab run" else blrun)(prog, cwd=wd)
        text = out + err
        lines = [
            ln
            for ln in text.splitlines()
            if "not been initialized" in ln and not ln.startswith(("[rank", "ValueError", "    "))
        ]
        head = next((ln for ln in lines if "raised ValueError" in ln), "")
        print(f"[{prog} / {how}] rc={rc}\n  headline: {head[:400]}")
        counts = sorted({ln.split(" after ")[-1] for ln in lines if " after " in ln and "collective call" in ln})
        none_recorded = "no collective calls were recorded" in text
        advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
        print(f"  counts: {counts}; ledger says none recorded: {none_recorded}\n  {advice[:300]}")
        if "refusing its arguments" in head:
            broken.append(
                f"{prog} / {how}: says the barrier was 'refusing its arguments'; it had none, there was no group"
            )
        if none_recorded and any(c.startswith("1 ") for c in counts):
            broken.append(
                f"{prog} / {how}: 'after 1 collective call' while the ledger says 'no collective calls were recorded'"
            )
        if what not in advice and f"line {line_no}" not in advice and f":{line_no}" not in advice:
            broken.append(f"{prog} / {how}: the advice ('{advice[:90]}') names neither {what} nor line {line_no}")
verdict(broken)
