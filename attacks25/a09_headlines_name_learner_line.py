"""Promise: the diagnosis's headline is true and names the learner's line (reference: 'The call chain').
Programs whose real behaviour is clear: learner/p01 (barrier under `if rank == 0`, line 10: rank 0 alone);
p02 (DDP model with BatchNorm evaluated on rank 0 only: DDP's buffer broadcast at line 11, reached from
`validation(model)` line 24, against the others' barrier at line 26); p06 (DDP(model, device_ids=[local_rank])
on a CPU module, line 13: every rank raises ValueError); p12 (barrier before rank 0's save: `--races` names the
save at line 12 and the load at line 14 as a race). Each under `barrierlab run` and, for p01/p02, bl.run(init=False)."""

from _h import Workdir, blrun, cli, verdict

cases = [
    ("p01_barrier_only_on_rank0.py", (), ["rank 0 called barrier #1 at", ":10", "ranks 1–3 never did"]),
    (
        "p02_validation_rank0_ddp_forward.py",
        (),
        [
            "rank 0 made broadcast",
            ":11, in validation",
            ":24, in main: validation(model)",
            ":26, in main: dist.barrier()",
            "model.module",
        ],
    ),
    (
        "p06_ddp_device_ids_on_cpu.py",
        (),
        [
            "raised ValueError: DistributedDataParallel device_ids",
            ":13, in main: ddp_model = DDP(model, device_ids=[local_rank])",
        ],
    ),
    (
        "p12_barrier_before_save.py",
        ("--races",),
        [
            "Races (barrierlab",
            "for writing at p12_barrier_before_save.py, line 12",
            "p12_barrier_before_save.py, line 14",
            "nothing orders them on gloo",
        ],
    ),
]
broken = []
for prog, extra, wanted in cases:
    hows = ["barrierlab run"] + (["bl.run"] if prog[:3] in ("p01", "p02") else [])
    for how in hows:
        with Workdir() as wd:
            rc, out, err = cli(prog, extra=extra, cwd=wd) if how == "barrierlab run" else blrun(prog, cwd=wd)
        text = out + err
        missing = [w for w in wanted if w not in text]
        print(f"[{prog} / {how}] rc={rc} missing={missing}")
        if missing:
            broken.append(f"{prog} / {how}: the diagnosis lacks {missing}")
verdict(broken)
