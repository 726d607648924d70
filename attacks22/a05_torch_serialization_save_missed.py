"""attack22 a05: torch.serialization.save / torch.serialization.load (the same functions as torch.save/load).

Promise (docs/reference.md): "torch.save/load ... are wrappers that record the call", and the model reports a
read of a file another rank wrote with nothing ordering them. torch.save IS torch.serialization.save, but the
recorder replaces only the attribute `torch.save`: code that calls torch.serialization.save/load (or did
`from torch.serialization import save` before recording began) writes and reads in C++ unseen. Rank 0 writes,
rank 1 reads 0.3 s later with nothing ordering them: the race is reported with torch.save/torch.load (control)
and missed with torch.serialization.save/load. torch.jit.save/load (also C++) is shown as well. Exit 0 if every
variant's race is reported.
"""

import os
import time

import torch.distributed as dist
from _h import races_of, verdict


def via(save, load):
    def job(d):
        import torch

        p = os.path.join(d, "x.pt")
        if dist.get_rank() == 0:
            save(torch.nn.Linear(2, 2) if "jit" in save.__module__ else {"a": 1}, p)
        else:
            time.sleep(0.4)
            load(p)
        dist.barrier()

    return job


def main():
    import torch

    def jit_save(m, p):
        torch.jit.save(torch.jit.script(m), p)

    jit_save.__module__ = "jit"
    variants = {
        "torch.save/torch.load (control)": (lambda o, p: torch.save(o, p), lambda p: torch.load(p)),
        "torch.serialization.save/load": (
            lambda o, p: torch.serialization.save(o, p),
            lambda p: torch.serialization.load(p),
        ),
        "torch.jit.save/load": (jit_save, lambda p: torch.jit.load(p)),
    }
    missed = []
    for name, (save, load) in variants.items():
        run, races = races_of(via(save, load))
        assert run.ok, run
        print(f"{name}: {len(races)} race(s)")
        for r in races:
            print("   ", r[:200])
        if not races:
            missed.append(name)
    if "torch.save/torch.load (control)" in missed:
        print("control missed too: the attack proves nothing")
        raise SystemExit(2)
    verdict(bool(missed), f"unordered write/read missed with: {', '.join(missed) or 'none'}")


if __name__ == "__main__":
    main()
