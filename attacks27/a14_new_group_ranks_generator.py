"""Promise (reference: "`barrierlab run train.py -n 4` stands in for `torchrun --standalone --nproc-per-node 4
train.py`"; recording "never wraps torch's objects, so ... behave exactly as without barrierlab"). Program
learner/p14: dist.new_group(r for r in range(world) if r % 2 == 0) -- members as a generator expression, which
torch 2.13 accepts (_new_group_with_tag: `ranks = sorted(ranks)`). Under torchrun (4 ranks) it finishes, the even
ranks printing "writers sum 2.0 group size 2". barrierlab's new_group wrapper reads the members for its record
(record.py _new_group_text: `{int(r) for r in ranks}`) before calling torch, which then gets an exhausted
generator. Checks (3 runs each): barrierlab run -n 4 finishes like torchrun; with record=False too."""

from _h import LEARNER, PY, SRC, Workdir, cli, env, run, verdict

broken = []
with Workdir() as wd:
    rc, out, err = run(
        [
            PY,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "4",
            str(LEARNER / "p14_ranks_generator.py"),
        ],
        timeout=100,
        cwd=wd,
        env=env(OMP_NUM_THREADS=1),
    )
print(f"[torchrun] rc={rc}: {[ln for ln in out.splitlines() if 'writers sum' in ln]}")
for i in range(3):
    with Workdir() as wd:
        rc2, out2, err2 = cli("p14_ranks_generator.py", n=4, timeout=3, cwd=wd, wall=60)
    first = next((ln for ln in out2.splitlines() if ln.startswith("  rank 0:")), "")
    print(f"[barrierlab run {i + 1}] rc={rc2}: {out2.splitlines()[0] if out2 else ''} {first.strip()[:160]}")
    if rc == 0 and rc2 != 0:
        broken.append(f"run {i + 1}: torchrun rc=0, barrierlab run rc={rc2}: {first.strip()[:160]}")
code = f"""
import sys; sys.path.insert(0, {str(SRC)!r})
from barrierlab import script
r = script.run_script({str(LEARNER / "p14_ranks_generator.py")!r}, 4, [], timeout=3, deadline=20, record=False)
print([x.status for x in r.ranks])
"""
with Workdir() as wd:
    rc3, out3, err3 = run([PY, "-c", code], timeout=60, cwd=wd)
print(f"[run_script record=False] {out3.strip()}")
verdict(broken)
