"""Promise: the headline is true and the advice fixes THAT program. Program learner/p05: the training loop
all-reduces a loss each step (line 21, main thread); after step 2 a background thread saves a checkpoint and calls
dist.barrier() (line 13) on the same default group. The two threads' calls enter the group in an order that
differs per rank (rank 0's thread is the quickest), so call #4 pairs rank 0's barrier with the others'
all_reduce; gloo times out. Every rank's code makes the same calls in the same order in each thread: what differs
is the interleaving of two threads on one group (DCP's async_save uses a group of its own for its background
work for this reason). Checks (3 runs): the diagnosis says the barrier came from another thread than the
all_reduce (or advises a separate group / the main thread); advice that only says "make every rank call the same
collectives in the same order" does not fix it."""

from _h import Workdir, cli, verdict

broken = []
for i in range(3):
    with Workdir() as wd:
        rc, out, err = cli("p05_background_save.py", timeout=3, cwd=wd, wall=150)
    text = out + err
    lines = text.splitlines()
    head = next(
        (ln for ln in lines if ln and not ln.startswith((" ", "[rank", "Run(", "#", "(")) and "call #" in ln), ""
    )
    advice = next((ln for ln in lines if ln.startswith("What to do:")), "")
    start = lines.index(head) if head in lines else 0
    diag = "\n".join(lines[start:])
    print(f"[run {i + 1}] rc={rc}\n  headline: {head[:300]}\n  advice: {advice[:300]}")
    if rc == 0:
        print("  finished this time")
        continue
    if "thread" not in diag.lower().replace("threading", ""):
        # The whole output, so that a run that went another way can be told from a wrong diagnosis.
        print(f"  the whole output of run {i + 1}:\n" + text[-4000:])
        broken.append(
            f"run {i + 1}: the diagnosis never says the barrier was made by a background thread; advice: {advice[:120]}"
        )
verdict(broken)
