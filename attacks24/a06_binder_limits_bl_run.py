"""Promise (docs/lab.md: a Binder session has 1 CPU and 2 GB; README: "a deadlock demo ends by itself within
seconds"; reference: the call returns within the deadline + about 0.5 s; containment: every process a rank starts
ends with the run). Under taskset -c 0 and a 2 GB memory cgroup (swap off), a driver runs bl.run on: a deadlock
(barrier_on_rank0), a straggler, a DDP step, uneven_data, and a rank that allocates past the memory limit (the
kernel's OOM killer ends it). Each call must end within its deadline + 1 s, the OOM'd rank must be reported as
killed (not finished / not 'raised' with no word on memory) and the run must say what happened; after the driver
exits no process of it may be left (cgroup empty). Also the same under prlimit --as=2 GiB."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, Limited, Verdict, env, run  # noqa: E402

DRIVER = r"""
import json, time, barrierlab as bl, torch, torch.distributed as dist
from barrierlab.scenarios import barrier_on_rank0, straggler, ddp_step, uneven_data

def hog():
    chunks = []
    if dist.get_rank() == 2:
        for _ in range(40):  # 40 x 128 MiB = 5 GiB, touched
            chunks.append(torch.ones(32 * 2**20))
    dist.barrier()
    return len(chunks)

out = []
for name, fn in [("deadlock", barrier_on_rank0.scenario), ("straggler", straggler.scenario), ("ddp", ddp_step.scenario),
                 ("uneven", uneven_data.scenario), ("hog", hog)]:
    t = time.monotonic()
    r = bl.run(fn, 4, timeout=3, deadline=12)
    out.append(dict(name=name, seconds=time.monotonic() - t, statuses=[str(x.status) for x in r.ranks],
                    diagnosis=str(r.diagnosis), repr=repr(r)))
print("RESULT" + json.dumps(out))
"""

v = Verdict()
for label, make in [("cgroup 2 GB + cpu 0", "cgroup"), ("prlimit --as 2 GiB + cpu 0", "prlimit")]:
    with Limited("a24a06") as lim:
        if make == "cgroup":
            cmd = lim.prefix() + [PY, "-c", DRIVER]
        else:  # the same cgroup without a limit keeps track of the processes; the limit is RLIMIT_AS
            (lim.path / "memory.limit_in_bytes").write_text("-1")
            cmd = lim.prefix() + ["prlimit", f"--as={2 * 2**30}", PY, "-c", DRIVER]
        rc, out, err = run(cmd, timeout=110, env=env(BARRIERLAB_LIVE=0))
        import time

        time.sleep(1.5)
        left = lim.procs()
        print(
            f"=== {label}: driver exit {rc}, OOM kills in the cgroup: {lim.oom_kills()}, processes left 1.5 s after: {left}"
        )
        v.check(not left, f"{label}: {len(left)} process(es) left after the driver exited: {left}")
        if rc != 0 or "RESULT" not in out:
            v.check(False, f"{label}: driver failed rc={rc}: {out[-1500:]} {err[-2500:]}")
            continue
        for item in json.loads(out.split("RESULT", 1)[1]):
            head = item["diagnosis"].splitlines()[0] if item["diagnosis"] else ""
            print(f"  {item['name']}: {item['seconds']:.1f} s {item['statuses']} :: {head[:300]}")
            v.check(item["seconds"] <= 12 + 1.0, f"{label}: {item['name']} took {item['seconds']:.1f} s (deadline 12)")
            if item["name"] in ("straggler", "ddp"):
                v.check(all(s == "finished" for s in item["statuses"]), f"{label}: {item['name']} {item['statuses']}")
            if item["name"] == "hog":
                print("   ", item["repr"][:800].replace("\n", "\n    "))
                print("   ", item["diagnosis"][:1500].replace("\n", "\n    "))
                s2 = item["statuses"][2]
                v.check(s2 != "finished", f"{label}: the hog rank 2 is {s2}")
                v.check(
                    "memory" in item["diagnosis"].lower() or "memory" in item["repr"].lower(),
                    f"{label}: hog: neither the diagnosis nor the repr says memory ran out (rank 2: {s2})",
                )
v.exit()
