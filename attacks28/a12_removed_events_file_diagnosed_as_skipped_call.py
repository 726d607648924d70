"""a12 — rank 1 removes rank 0's events file in the run folder (as a careless /tmp cleaner would), or replaces it
with an empty file or a symlink to /dev/zero; both ranks then pass a barrier (which needs both) and finish.
Promise (containment.md, 'Whose outcome is it'): a rank can delete or replace files in the run's folder; a record
removed before the kernel saw it is reported as 'rank N's record was removed before the run ended', never as a
rank that exited early; the other ranks' results stand. Held if the run says rank 0's record was removed or
replaced, or at least does not say rank 0 never made the barrier it completed."""

from _h import driver, finish, result_line

CODE = r"""
import json, os, barrierlab as bl
def mk(mode):
    def f():
        import torch.distributed as dist
        dist.barrier()
        d = os.readlink("/proc/self/fd/600")
        if dist.get_rank() == 1:
            p = f"{d}/rank0.events"
            os.unlink(p)
            if mode == "empty": open(p, "w").close()
            if mode == "zero": os.symlink("/dev/zero", p)
        dist.barrier()
        return 5
    return f
bl.run(lambda: 1, 2)
out = {}
for mode in ("unlink", "empty", "zero"):
    r = bl.run(mk(mode), 2, timeout=2, deadline=6)
    out[mode] = {"repr": repr(r), "diag": str(r.diagnosis), "status": [str(x.status) for x in r]}
print("RESULT " + json.dumps(out))
"""
broken = []
d = driver(CODE, timeout=100)
res = result_line(d["out"])
if res is None:
    broken.append(f"no result (rc {d['rc']}): {d['err'][-800:]}")
else:
    for mode, r in res.items():
        text = r["repr"] + "\n" + r["diag"]
        said = "removed" in text or "replaced" in text
        false_claim = "rank 0 never" in r["diag"]
        print(f"== {mode}: status {r['status']}\n{r['repr']}\n{r['diag'][:420]}\n")
        if not said and false_claim:
            line = next((ln for ln in r["diag"].splitlines() if "rank 0 never" in ln), "")
            broken.append(
                f"{mode}: both ranks finished the barrier, the run never says rank 0's record was "
                f"removed/replaced, and the diagnosis says: {line.strip()!r}"
            )
if d["left"]:
    broken.append(f"left: {d['left']}")
finish(broken, "another rank's events file removed or replaced")
