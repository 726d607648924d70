"""Promise (file hand-offs): a silently wrong read is reported as the race it is, with the right lines, and the
diagnosis claims nothing the record cannot show. Program learner/p10 (3 ranks): each epoch rank 0 rewrites
schedule.json in place (line 15), all ranks pass a barrier (line 17), then read it (line 20); rank 1 is slow
(0.2 s). Nothing holds rank 0 back from the next epoch's rewrite until rank 1 has read, so rank 1 reads the NEXT
epoch's schedule (it prints the epochs it read: [1, 2, 3, 3] instead of [0, 1, 2, 3]). Every rank finishes.
Checks (3 runs): the races name rank 0's write at line 15 and rank 1's read at line 20 as unordered; no race
pairs rank 1's read with the write the barrier did order; and the headline does not say the run "came out
right" when a rank's output shows it read another epoch's schedule."""

import ast
import re

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p10_rewrite_each_epoch.py", n=3, timeout=5, cwd=wd, wall=60, extra=("--races",))
    text = out + err
    lines = text.splitlines()
    read = {}
    for k, ln in enumerate(lines):
        m = re.match(r"--- rank (\d) ---", ln)
        if m and k + 1 < len(lines) and lines[k + 1].startswith("epochs read:"):
            read[int(m.group(1))] = ast.literal_eval(lines[k + 1].split(":", 1)[1].strip())
    head = next((ln for ln in lines if ln.startswith("All 3 ranks")), "")
    if len(read) < 3:  # a reader failed (it read the file while rank 0 rewrote it): show what was said
        print("\n".join(ln[:300] for ln in lines if not ln.startswith(("[rank", "  File", "    ")))[:3000])
        if "line 15" not in text or "line 20" not in text:
            broken.append(
                f"run {i + 1}: a reader failed and the diagnosis names neither rank 0's write (15) nor the read (20)"
            )
    print(f"[run {i + 1}] rc={rc} epochs read: {read}\n  headline: {head[:300]}")
    wrong = {r: v for r, v in read.items() if v != [0, 1, 2, 3]}
    races = [ln for ln in lines if ln.startswith("- rank 1 read `schedule.json` at p10_rewrite_each_epoch.py, line 20")]
    if wrong and not races:
        broken.append(f"run {i + 1}: rank 1 read other epochs ({wrong}) and no race names its read at line 20")
    for ln in races:
        m = re.search(
            r"line 20 \(t=([\d.]+) s\) after rank 0 opened it for writing at \S+ line 15 \(t=([\d.]+) s\)", ln
        )
        if not m:
            broken.append(f"run {i + 1}: race line not understood: {ln[:160]}")
    if wrong and "came out right" in head:
        broken.append(
            f"run {i + 1}: headline says 'this run came out right by timing' while rank {sorted(wrong)} read {wrong} (should be [0, 1, 2, 3])"
        )
verdict(broken)
