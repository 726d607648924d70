"""Promise (docs/reference.md, diagnose): for a rank that failed on a missing file, the diagnosis says what the
record shows became of it. Program: the textbook missing barrier (rank 0 writes vocab after 0.3 s, the others
read it at once: learner/p03). The record holds rank 0's write of the file; the diagnosis must not say that no
rank wrote it, and should point at the write (the missing barrier). Run under `barrierlab run` and bl.run."""

import os

from _h import Workdir, blrun, cli, verdict

broken = []
for how in ("barrierlab run", "bl.run"):
    with Workdir() as wd:
        rc, out, err = (cli if how == "barrierlab run" else blrun)("p03_missing_barrier_before_read.py", cwd=wd)
        text = out + err
        written = os.path.exists(os.path.join(wd, "vocab_p03.txt"))  # rank 0 wrote it (and never removed it)
        false_claim = [line.strip() for line in text.splitlines() if "no rank wrote it during the run" in line]
        print(f"[{how}] rc={rc}; vocab_p03.txt written by rank 0 during the run: {written}")
        for line in false_claim:
            print(f"[{how}]   diagnosis: {line}")
        mentions_write = any(
            "line 13" in line or "p03_missing_barrier_before_read.py:13" in line
            for line in text.splitlines()
            if "wr" in line
        )
        if written and false_claim:
            broken.append(
                f"{how}: rank 0 wrote vocab_p03.txt (line 13) during the run, the diagnosis says '{false_claim[0]}'"
            )
        elif not mentions_write:
            broken.append(f"{how}: the diagnosis never names rank 0's write at line 13")
verdict(broken)
