"""Every node downloads pretrained weights into one shared hub cache under a lock that only works within a node;
each download streams into its own partial file and moves it into place atomically.

Models: huggingface/huggingface_hub ``file_download.py`` (``hf_hub_download``: blob path under the cache, a
``FileLock`` next to it, the data streamed into a partial file and moved into place) and PR #4306 ("Make
concurrent downloads safe even when file locking is broken": each download writes to a process-unique
``<etag>.<random>.incomplete`` and renames it atomically, so a lock that does not exclude costs only duplicated
bandwidth); determined-ai/determined PR #6738; huggingface/datasets PR #432.

What it does: 2 ranks, each standing for one node (``GPUS_PER_NODE = 1``), share one cache folder (name broadcast
from rank 0 by ``_helpers_tmp.shared_tmpdir``). Both call ``hub_download`` for the same URL at the same moment,
each under its node's lock (``_helpers_hub.node_file_lock``, a lock file in the node's own folder), then load the
weights, wrap the model in DDP and fine-tune for three steps.

Why it is right although every rank downloads, no barrier orders them and the lock does not exclude the other
node: each rank streams into its own partial file (a random name) and ``os.replace`` moves it onto the blob path
atomically. Both downloads succeed; the second replace swaps in an identical file, and a rank that already opened
the blob keeps reading the one it opened. Both ranks load the same weights and meet in the DDP constructor.
"""

import os
import uuid
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_hub import blob_name, http_get, node_file_lock
from _helpers_tmp import remove_tmpdir, shared_tmpdir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

GPUS_PER_NODE = 1
URL = "https://huggingface.co/tiny-org/tiny-regressor/resolve/main/pytorch_model.bin"


def hub_download(url, cache_dir, node_rank):
    blob = os.path.join(cache_dir, "blobs", blob_name(url))
    if os.path.exists(blob):
        return blob
    os.makedirs(os.path.dirname(blob), exist_ok=True)
    lock_path = os.path.join(cache_dir, f"node{node_rank}", ".locks", blob_name(url) + ".lock")
    with node_file_lock(lock_path):
        if os.path.exists(blob):  # another process of this node finished while we waited
            return blob
        incomplete = f"{blob}.{uuid.uuid4().hex}.incomplete"  # this process's own partial file
        with open(incomplete, "wb") as f:
            http_get(url, f)
        os.replace(incomplete, blob)
    return blob


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    cache_dir = shared_tmpdir("r26_hub_")
    try:
        path = hub_download(URL, cache_dir, node_rank=rank // GPUS_PER_NODE)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        model.load_state_dict(torch.load(path, weights_only=True))
        model = DDP(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(100 + rank)
        for step in range(3):
            x = torch.randn(8, 8, generator=g)
            loss = (model(x) - x[:, :1]).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if rank == 0:
                print(f"step {step}: loss {loss.item():.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            remove_tmpdir(cache_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
