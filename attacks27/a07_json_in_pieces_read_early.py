"""Promise (file hand-offs): when a reader fails, the diagnosis says which rank's write was not ordered with the
failing read, and never counts as ordering what did not order it. Program learner/p06: rank 0 streams labels.json
one entry at a time (open at line 15, 20 flushed writes 20 ms apart); ranks 1-3 poll os.path.exists (line 23)
and json.load it (lines 25-26) as soon as it exists: JSONDecodeError. The file's existence is no marker here (it
exists from the open on). Checks (3 runs): each failing reader's evidence names rank 0's write (line 15) as not
ordered with its read (line 25); no handoff of labels.json is counted as ordered; the exception is named as what
the rank raised (json.JSONDecodeError), not as another type."""

import re

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p06_json_in_pieces.py", timeout=3, cwd=wd, wall=60, extra=("--races",))
    text = out + err
    lines = text.splitlines()
    head = next(
        (
            ln
            for ln in lines
            if "failed by themselves" in ln or "raised" in ln and not ln.startswith((" ", "[", "Run("))
        ),
        "",
    )
    print(f"[run {i + 1}] rc={rc}\n  headline: {head[:300]}")
    for r in (1, 2, 3):
        ev = [ln for ln in lines if ln.startswith(f"  rank {r}'s last read before it raised")]
        if not ev:
            if f"rank {r} raised" in text or "ranks 1–3" in head:
                broken.append(f"run {i + 1}: no evidence line names the unordered write for failing rank {r}")
            continue
        print("  ", ev[0][:260])
        if (
            not re.search(r"rank 0 opened it for writing at p06_json_in_pieces.py, line 15", ev[0])
            or "line 25" not in ev[0]
        ):
            broken.append(
                f"run {i + 1}: rank {r}'s evidence does not name rank 0's write at line 15 and its read at line 25: {ev[0][:200]}"
            )
    ordered = re.search(r"File handoffs the run's calls ordered[^:]*: (\d+)", text)
    if ordered and ordered.group(1) != "0":
        broken.append(f"run {i + 1}: {ordered.group(0)} (nothing ordered the write and the reads)")
    said = re.findall(r"raised (\w+): JSONDecodeError", text)
    if said:
        broken.append(
            f"run {i + 1}: the diagnosis says the readers 'raised {said[0]}: JSONDecodeError: ...'; they raised json.JSONDecodeError"
        )
verdict(broken)
