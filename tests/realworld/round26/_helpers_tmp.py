"""Helper module of round 26 (not an item): a scratch folder shared by every rank.

Rank 0 makes the folder under the temp dir and broadcasts its name (``broadcast_object_list``), so every rank
calls :func:`shared_tmpdir`; :func:`remove_tmpdir` is called by rank 0 alone, after the run's last collective.
"""

import shutil
import tempfile

import torch.distributed as dist


def shared_tmpdir(prefix):
    name = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(name, src=0)
    return name[0]


def remove_tmpdir(path):
    shutil.rmtree(path, ignore_errors=True)
