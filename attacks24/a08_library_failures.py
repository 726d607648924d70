"""Promise (reference: "A diagnosis names the learner's whole chain of calls that led to a collective"; "Only the
learner's frames count"; collectives torch issues itself (DDP, DCP, ...) appear in the diagnosis): failures inside
libraries must be diagnosed with the right rank and the learner's line, never a torch file as the place. Cases
(each bl.run, 4 ranks, timeout 3 s): DDP parameter shapes that differ on rank 1; no_sync() on rank 0 only;
a DDP model whose rank 1 skips a layer with find_unused_parameters=False; broadcast_object_list of an unpicklable
object on src rank 0; monitored_barrier that rank 3 skips; new_subgroups(2) where rank 3 skips its subgroup's
all_reduce; dcp.load of a checkpoint whose rank-1 shard file is missing."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, Verdict, env, run  # noqa: E402

CASES = r"""
import json, os, shutil, tempfile, threading
import torch, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.nn.parallel import DistributedDataParallel as DDP
import barrierlab as bl


def ddp_shapes():
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 3 if rank == 1 else 2)
    ddp = DDP(model)  # LINE ddp_shapes
    return 1


def no_sync_one_rank():
    rank = dist.get_rank()
    ddp = DDP(torch.nn.Linear(4, 2))
    x = torch.ones(8, 4)
    for step in range(3):
        if rank == 0:
            with ddp.no_sync():
                ddp(x).sum().backward()  # LINE no_sync_one_rank
        else:
            ddp(x).sum().backward()
    dist.barrier()
    return 1


class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x, use_b):
        x = self.a(x)
        return self.b(x) if use_b else x


def unused_on_one_rank():
    rank = dist.get_rank()
    ddp = DDP(Two(), find_unused_parameters=False)
    for step in range(3):
        out = ddp(torch.ones(2, 4), use_b=(rank != 1))  # LINE unused_on_one_rank
        out.sum().backward()
    return 1


def unpicklable_object():
    rank = dist.get_rank()
    payload = [threading.Lock()] if rank == 0 else [None]
    dist.broadcast_object_list(payload, src=0)  # LINE unpicklable_object
    return 1


def monitored_skip():
    rank = dist.get_rank()
    if rank != 3:
        dist.monitored_barrier(timeout=__import__("datetime").timedelta(seconds=2))  # LINE monitored_skip
    return 1


def subgroup_skip():
    rank = dist.get_rank()
    mine, groups = dist.new_subgroups(group_size=2)
    t = torch.ones(1)
    if rank != 3:
        dist.all_reduce(t, group=mine)  # LINE subgroup_skip
    return float(t)


def dcp_missing_shard(folder):
    rank = dist.get_rank()
    sd = {"w%d" % i: torch.full((8,), float(i)) for i in range(4)}
    model = torch.nn.Linear(4, 4)
    dcp.save({"model": model.state_dict()}, checkpoint_id=folder)
    dist.barrier()
    if rank == 0:
        for name in os.listdir(folder):
            if name.startswith("__1_"):
                os.remove(os.path.join(folder, name))
    dist.barrier()
    fresh = {"model": torch.nn.Linear(4, 4).state_dict()}
    dcp.load(fresh, checkpoint_id=folder)  # LINE dcp_missing_shard
    return 1


src = open(__file__).read().splitlines() if "__file__" in dir() else None
results = {}
for fn, args in [(ddp_shapes, ()), (no_sync_one_rank, ()), (unused_on_one_rank, ()), (unpicklable_object, ()),
                 (monitored_skip, ()), (subgroup_skip, ()), (dcp_missing_shard, (tempfile.mkdtemp() + "/ck",))]:
    r = bl.run(fn, 4, args=args, timeout=3, deadline=10)
    results[fn.__name__] = dict(repr=repr(r), diagnosis=str(r.diagnosis), statuses=[str(x.status) for x in r.ranks])
print("RESULT" + json.dumps(results))
"""

lines = {}
for i, text in enumerate(CASES.splitlines()):
    if "# LINE " in text:
        lines[text.split("# LINE ")[1].strip()] = i + 1

EXPECT = {  # case -> ranks the headline must name as the cause
    "ddp_shapes": ["rank 1"],
    "no_sync_one_rank": ["rank 0"],
    "unused_on_one_rank": ["rank 1"],
    "unpicklable_object": ["rank 0"],
    "monitored_skip": ["rank 3"],
    "subgroup_skip": ["rank 3"],
    "dcp_missing_shard": [],
}

import json  # noqa: E401,E402
import tempfile

v = Verdict()
with tempfile.TemporaryDirectory() as d:
    script = Path(d) / "cases.py"
    script.write_text(CASES)
    rc, out, err = run([PY, str(script)], timeout=110, env=env(BARRIERLAB_LIVE=0))
    if "RESULT" not in out:
        print(out[-2000:], err[-3000:])
        v.check(False, f"driver failed rc={rc}")
        v.exit()
    results = json.loads(out.split("RESULT", 1)[1])
    for name, res in results.items():
        line = lines[name]
        diag = res["diagnosis"]
        print(
            f"=== {name} (learner's line {line}) statuses {res['statuses']}\n{res['repr'][:700]}\n--\n{diag[:1800]}\n"
        )
        head = diag.split("What to do")[0]
        v.check(
            f"cases.py:{line}" in head or f"line {line}" in head,
            f"{name}: the diagnosis does not name the learner's line {line}",
        )
        v.check(
            "site-packages/torch" not in head and "torch/nn/parallel" not in head.split("\n")[0],
            f"{name}: the diagnosis headline names a torch file as the place",
        )
        if name == "no_sync_one_rank":
            v.check(
                "no_sync" in head,
                "no_sync_one_rank: the diagnosis never says rank 0's backward ran inside no_sync() "
                "(it blames `rank != 0` and advises moving backward() out from under it)",
            )
        if name == "subgroup_skip":
            v.check(
                "every rank made the same collective calls" not in head,
                "subgroup_skip: says 'every rank made the same collective calls' though rank 3 skipped its subgroup's all_reduce",
            )
        if name == "dcp_missing_shard":
            v.check(
                "could not be shown" not in diag
                and ("FileNotFoundError" in diag or "No such file" in diag or "__1_" in diag),
                "dcp_missing_shard: the diagnosis shows no message (str() raised TypeError): the missing shard is never named",
            )
        for who in EXPECT[name]:
            v.check(
                who in head.splitlines()[0], f"{name}: headline does not name {who}: {head.splitlines()[0][:300]!r}"
            )
v.exit()
