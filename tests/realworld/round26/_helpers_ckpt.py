"""Helper module of round 26 (not an item): small pieces of a sharded checkpointer.

* :func:`state_digest` -- a SHA-256 over an optimizer ``state_dict`` (tensors by value, other leaves by ``repr``),
  the "has this shard changed since the last save?" test of an incremental checkpointer.
* :func:`write_manifest` -- rank 0's JSON manifest: for every rank, the step whose shard file holds its current
  state.
"""

import hashlib
import json
import os

import torch


def _walk(obj, h):
    if isinstance(obj, torch.Tensor):
        h.update(obj.detach().contiguous().numpy().tobytes())
    elif isinstance(obj, dict):
        for k in sorted(obj, key=repr):
            h.update(repr(k).encode())
            _walk(obj[k], h)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _walk(v, h)
    else:
        h.update(repr(obj).encode())


def state_digest(state_dict):
    h = hashlib.sha256()
    _walk(state_dict, h)
    return h.hexdigest()


def write_manifest(folder, step, shard_steps):
    path = os.path.join(folder, "manifest.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"step": step, "shards": {str(r): s for r, s in enumerate(shard_steps)}}, f)
    os.replace(path + ".tmp", path)
