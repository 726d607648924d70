"""HF-style save_pretrained into a folder (config.json first, then the weights), then from_pretrained-style load.
good: save all, barrier, others list the folder and load -> no race.
bad: others poll for config.json (written first), then list the folder and load what is there -> race with the
weights' creation (the weights came later: the listing misses them)."""

import sys

import _h


def _save(d):
    import json
    import os
    import time

    import torch

    os.makedirs(os.path.join(d, "model"), exist_ok=True)
    with open(os.path.join(d, "model", "config.json"), "w") as f:
        json.dump({"hidden": 8}, f)
    time.sleep(0.4)
    torch.save({"w": torch.ones(8)}, os.path.join(d, "model", "pytorch_model.bin"))


def _load(d):
    import json
    import os

    import torch

    m = os.path.join(d, "model")
    cfg = json.load(open(os.path.join(m, "config.json")))
    files = sorted(os.listdir(m))
    w = torch.load(os.path.join(m, "pytorch_model.bin")) if "pytorch_model.bin" in files else None
    return cfg["hidden"], files, None if w is None else float(w["w"].sum())


def good(d):
    import torch.distributed as dist

    if dist.get_rank() == 0:
        _save(d)
    dist.barrier()
    return _load(d)


def bad(d):
    import os
    import time

    import torch.distributed as dist

    if dist.get_rank() == 0:
        _save(d)
        v = "saved"
    else:
        while not os.path.exists(os.path.join(d, "model", "config.json")):
            time.sleep(0.002)
        v = _load(d)
    dist.barrier()
    return v


sys.exit(_h.judge([("save-barrier-load", good, False, {}), ("poll-config-then-load", bad, True, {})]))
