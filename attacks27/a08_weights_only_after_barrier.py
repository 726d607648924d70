"""Promise (file hand-offs): never blame an ordering that was actually there. Program learner/p07: rank 0
torch.save()s a dict holding a dataclass (line 18), every rank passes dist.barrier() (line 19), then every rank
torch.load()s it (line 20) and raises UnpicklingError (torch >= 2.6 loads weights_only=True). The hand-off was
ordered by the barrier. Checks (3 runs): the diagnosis names the load line and says no collective is to blame;
--races reports no race and counts the ordered hand-offs; nothing says the read was unordered."""

import re

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p07_weights_only.py", timeout=3, cwd=wd, wall=60, extra=("--races",))
    text = out + err
    head = next((ln for ln in text.splitlines() if ln.startswith("ranks 0–3 raised")), "")
    races = re.search(r"Races \([^)]*\): (\S+)", text)
    handoffs = re.search(r"File handoffs the run's calls ordered[^:]*: (\d+)", text)
    print(
        f"[run {i + 1}] rc={rc}\n  headline: {head[:160]} ... {head[-120:]}\n  races: {races and races.group(1)}; ordered: {handoffs and handoffs.group(1)}"
    )
    if "p07_weights_only.py:20" not in head:
        broken.append(f"run {i + 1}: headline does not name the torch.load line 20: {head[:200]}")
    if not races or races.group(1) != "none":
        broken.append(f"run {i + 1}: races reported for an ordered hand-off: {races and races.group(0)}")
    if "nothing orders them" in text or "not ordered" in text:
        broken.append(f"run {i + 1}: an unordered read is claimed")
    if "\\x1b[" in head:
        print("  note: the headline shows torch's ANSI escape codes as literal text (\\x1b[1m)")
verdict(broken)
