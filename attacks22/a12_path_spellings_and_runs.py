"""attack22 a12: one file under several spellings, and a file written in one run and read in the next.

Promise (docs/reference.md, "File races"): accesses are compared by the name used, made absolute; a read of a file
another rank changed that nothing ordered is a race, and ordered pairs are not. (1) Rank 0 writes and rank 1
reads 0.3 s later, unordered, under different spellings of one path: absolute / relative (after os.chdir),
relative / "sub/../f.txt", "./f.txt" / absolute, absolute / "dir//f.txt": each must be reported. (2) A file
written by rank 0 in run 1 and read by every rank in run 2 (nobody writes it in run 2): no race in either run.
(Informational, not judged: a leading "//" -- a name POSIX lets abspath keep -- is a second name for the file,
which the reference says is not seen, like a symlink.) Exit 0 if (1) and (2) hold.
"""

import os
import shutil
import tempfile
import time

import torch.distributed as dist
from _h import races_of, verdict

import barrierlab as bl


def names(wname, rname):
    def job(d):
        os.makedirs(os.path.join(d, "sub"), exist_ok=True)
        os.chdir(d)
        p = {
            "abs": os.path.join(d, "f.txt"),
            "rel": "f.txt",
            "dotdot": os.path.join("sub", "..", "f.txt"),
            "dot": "./f.txt",
            "dslash_mid": d + "//f.txt",
            "dslash_lead": "/" + os.path.join(d, "f.txt"),
        }
        if dist.get_rank() == 0:
            with open(p[wname], "w") as f:
                f.write("x")
        else:
            time.sleep(0.3)
            with open(p[rname]) as f:
                f.read()
        dist.barrier()

    return job


def write_once(d):
    if dist.get_rank() == 0:
        with open(os.path.join(d, "vocab.txt"), "w") as f:
            f.write("a b c")
    dist.barrier()


def read_only(d):
    with open(os.path.join(d, "vocab.txt")) as f:
        return f.read()


def main():
    wrong = []
    for w, r in [("abs", "rel"), ("rel", "dotdot"), ("dot", "abs"), ("abs", "dslash_mid"), ("dslash_lead", "abs")]:
        run, races = races_of(names(w, r))
        assert run.ok, run
        judged = w != "dslash_lead"
        print(f"{'' if judged else '(info) '}write {w} / read {r}: {len(races)} race(s)")
        if judged and not races:
            wrong.append(f"missed {w}/{r}")
    d = tempfile.mkdtemp(prefix="a22-a12-")
    try:
        for fn in (write_once, read_only):
            run = bl.run(fn, 2, args=(d,))
            races = run.races()
            print(f"{fn.__name__}: {run.statuses}, {len(races)} race(s)")
            if races or not run.ok:
                wrong.append(f"{fn.__name__}: {[str(x) for x in races]}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    verdict(bool(wrong), "; ".join(wrong) or "every spelling compared; run 1's file read in run 2 races nothing")


if __name__ == "__main__":
    main()
