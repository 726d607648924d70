"""Promise: the headline is true and the advice fixes THAT program. Program learner/p04 ("pool-spawn"): each rank
evaluates in a concurrent.futures.ProcessPoolExecutor with the spawn context and the task all-reduces a metric
(line 12); .result() at line 28 re-raises the child's ValueError("Default process group has not been
initialized"): a spawned child is a fresh interpreter with no process group. The rank's own group existed the
whole time (init at line 18, destroy after the barrier). Checks (3 runs): the headline must not say that no
process group existed because init_process_group had not run yet or destroy_process_group had ended it, and the
advice must not be to move the collective between init_process_group() and destroy_process_group() (it is
already between them); it should say the call was made in a child process."""

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p04_process_in_rank.py", n=2, timeout=3, cwd=wd, wall=60, args=("pool-spawn",))
    text = out + err
    head = next((ln for ln in text.splitlines() if ln.startswith("ranks 0 and 1") or ln.startswith("rank ")), "")
    advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
    print(f"[run {i + 1}] rc={rc}\n  headline: {head[:600]}\n  advice: {advice[:300]}")
    if "init_process_group() had not made one yet, or destroy_process_group() had ended it" in head:
        broken.append(f"run {i + 1}: headline blames init/destroy order for a call made in a spawned child process")
    if "between init_process_group() and destroy_process_group()" in advice:
        broken.append(
            f"run {i + 1}: advice 'Make every collective between init_process_group() and destroy_process_group()' does not fix a call made in a spawned child"
        )
    if "child" not in head and "child" not in advice and "spawn" not in advice:
        broken.append(f"run {i + 1}: nothing says the collective was made in a child process")
verdict(broken)
