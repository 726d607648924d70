"""Ordering model vs torch.save/torch.load of one shared path (rank 0 saves, others load).
good: save, barrier, load -> no race.  bad: others load after a sleep, no barrier -> race (timing only).
bad2: others poll os.path.exists(path) then load: torch.save creates the file before writing it -> race."""

import sys

import _h


def good(d):
    import os
    import time

    import torch
    import torch.distributed as dist

    p = os.path.join(d, "ckpt.pt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        torch.save({"w": torch.arange(1000.0)}, p)
    dist.barrier()
    return float(torch.load(p)["w"].sum())


def bad(d):
    import os
    import time

    import torch
    import torch.distributed as dist

    p = os.path.join(d, "ckpt.pt")
    if dist.get_rank() == 0:
        torch.save({"w": torch.arange(1000.0)}, p)
    else:
        time.sleep(0.6)
    v = float(torch.load(p)["w"].sum())
    dist.barrier()
    return v


def bad2(d):
    import os
    import time

    import torch
    import torch.distributed as dist

    p = os.path.join(d, "ckpt.pt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        torch.save({"w": torch.arange(200000.0)}, p)
        v = "saved"
    else:
        while not os.path.exists(p):
            time.sleep(0.0005)
        try:
            v = float(torch.load(p)["w"].sum())
        except Exception as e:  # a partly written zip
            v = type(e).__name__
    dist.barrier()
    return v


sys.exit(
    _h.judge(
        [
            ("save-barrier-load", good, False, {}),
            ("load-after-sleep", bad, True, {}),
            ("poll-exists-then-load", bad2, True, {}),
        ]
    )
)
