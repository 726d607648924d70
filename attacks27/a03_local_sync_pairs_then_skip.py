"""Promise: the headline is true and names the right line and ranks; a correct group construction is never blamed.
Program learner/p03: each rank makes only its own pair's group with use_local_synchronization=True (torch's
docstring: "non-member ranks don't need to call into API"), listing itself first ([1, 0] on rank 1: torch sorts),
all-reduces in the pair 3 times, then rank 3 returns early and ranks 0-2 wait in dist.barrier() at line 18.
Checks (3 runs): the headline names barrier #1 at line 18, ranks 0-2 against rank 3, and does not blame new_group."""

import re

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p03_local_sync_pairs.py", timeout=3, cwd=wd, wall=60)
    text = out + err
    head = next(
        (
            ln
            for ln in text.splitlines()
            if ln.startswith("A collective") or "new_group" in ln and not ln.startswith(" ")
        ),
        "",
    )
    advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
    print(f"[run {i + 1}] rc={rc}\n  headline: {head}\n  advice: {advice[:160]}")
    if (
        not re.search(r"ranks 0–2 called barrier #1 at \S*p03_local_sync_pairs.py:18", head)
        or "rank 3 never did" not in head
    ):
        broken.append(f"run {i + 1}: headline does not name barrier #1 at line 18, ranks 0-2 vs rank 3: {head[:200]}")
    if "new_group" in head or "new_group" in advice:
        broken.append(
            f"run {i + 1}: a correct use_local_synchronization group is blamed: {head[:200]} / {advice[:200]}"
        )
verdict(broken)
