"""Promise: the headline is true and the advice fixes THAT program. Program learner/p12 (from the common
"seed workers from the global rank" recipe): DataLoader(num_workers=1, multiprocessing_context="spawn",
persistent_workers=True, worker_init_fn=seed_worker) where seed_worker calls dist.get_rank() (line 18). A spawned
worker is a fresh interpreter without the rank's process group, so the worker raises ValueError("Default process
group has not been initialized") and the loop (line 25) re-raises it; the rank's group existed the whole time.
Checks (3 runs): the headline must not say init_process_group had not run yet or destroy_process_group had ended
the group, the advice must not be to move collectives between init and destroy, and the diagnosis should say the
call ran in a DataLoader worker (a child process)."""

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p12_spawn_worker_init.py", n=2, timeout=5, cwd=wd, wall=80, extra=("--deadline", "40"))
    lines = (out + err).splitlines()
    head = next((ln for ln in lines if ln.startswith("ranks 0 and 1") or ln.startswith("rank ")), "")
    advice = next((ln for ln in lines if ln.startswith("What to do:")), "")
    print(f"[run {i + 1}] rc={rc}\n  headline: {head[:700]}\n  advice: {advice[:300]}")
    if "init_process_group() had not made one yet, or destroy_process_group() had ended it" in head:
        broken.append(
            f"run {i + 1}: headline blames init/destroy order for dist.get_rank() in a spawned DataLoader worker"
        )
    if "between init_process_group() and destroy_process_group()" in advice:
        broken.append(
            f"run {i + 1}: advice to move collectives between init and destroy; the call was in a spawned worker"
        )
verdict(broken)
