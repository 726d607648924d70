"""Helper module of round 26 (not an item): the parts of a hub download that are not the cache logic.

* :func:`node_file_lock` -- an exclusive ``fcntl.flock`` on a lock file. The items pass a lock file inside their
  node's own folder: it stands in for a lock that only excludes the processes of one node, which is what a
  shared cache gets on filesystems whose locks are node-local (Lustre ``localflock``, NFS ``local_lock=flock``;
  huggingface/huggingface_hub PR #4306 names these).
* :func:`http_get` -- the "network": it writes a small serialized state dict, derived from the URL, in four
  chunks with a pause after each (a download that takes about a second).
"""

import contextlib
import fcntl
import hashlib
import io
import os
import time

import torch


@contextlib.contextmanager
def node_file_lock(lock_path):
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def blob_name(url):
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def http_get(url, fileobj, chunks=4, pause=0.3):
    g = torch.Generator().manual_seed(int(blob_name(url)[:8], 16))
    state = {
        "0.weight": torch.randn(16, 8, generator=g) * 0.3,
        "0.bias": torch.zeros(16),
        "2.weight": torch.randn(1, 16, generator=g) * 0.3,
        "2.bias": torch.zeros(1),
    }
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    size = -(-len(data) // chunks)
    for start in range(0, len(data), size):
        fileobj.write(data[start:start + size])
        fileobj.flush()
        time.sleep(pause)
