"""PyTorch-BigGraph: the first trainer creates ``checkpoint_version.txt`` with "0" while the other trainers construct
their ``CheckpointManager`` and parse the same file -- on a shared filesystem the file can be seen before its content.

Models: facebookresearch/PyTorch-BigGraph PR #58 ("Mitigate race condition around checkpoint version creation": "in a
distributed setting, some trainers were seeing the checkpoint version file as empty ... creating the file (with an
initial empty content) and writing "0" to it are separate actions and thus other trainer may see the file while it's
in a state in between those two actions"; the fix "avoids creating the file and writing "0" to it if it doesn't exist
(as that's what other trainers already interpret a missing file as) and if the file is empty it treats it in the same
way as if it were missing"). Code modelled (written here, not copied): ``torchbiggraph/checkpoint_manager.py`` --
``CheckpointManager.__init__`` (rank 0 makes the folder; every trainer reads ``VERSION_FILE``, a missing file meaning
version 0), ``_write_version_file``, ``write_new_version`` / ``switch_to_new_version`` (rank 0 commits the new version
after a pass); ``torchbiggraph/train.py``'s trainers synchronising with ``td.barrier()`` (stand-ins: one embedding
partition per trainer trained with a margin loss, ``torch.save`` for the partition files; the shared filesystem's
delay between a file's creation and its data -- 1.0 s -- and the other trainer's setup before it reads -- 0.3 s).

The bug: rank 1 reads the version file after rank 0 created it and before rank 0 wrote "0", and ``int('')`` raises;
rank 0 trains its pass and waits in the end-of-pass barrier. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VERSION_FILE = "checkpoint_version.txt"


class CheckpointManager:
    def __init__(self, path, rank):
        self.path, self.rank = path, rank
        version_path = os.path.join(path, VERSION_FILE)
        if rank == 0:
            os.makedirs(path, exist_ok=True)
            if not os.path.exists(version_path):
                self._write_version_file(0)
        try:
            with open(version_path, "rt") as tf:
                version_string = tf.read().strip()
        except FileNotFoundError:
            self.checkpoint_version = 0
        else:
            self.checkpoint_version = int(version_string)  # BUG

    def _write_version_file(self, version):
        with open(os.path.join(self.path, VERSION_FILE), "wt") as tf:
            tf.flush()
            time.sleep(1.0)  # stand-in: the shared filesystem shows the file before its data
            tf.write("%d" % version)
            tf.flush()
            os.fsync(tf.fileno())

    def write(self, entity, part, embs):
        torch.save(embs, os.path.join(self.path, f"embeddings_{entity}_{part}.v{self.checkpoint_version + 1}.pt"))

    def switch_to_new_version(self):
        self.checkpoint_version += 1
        if self.rank == 0:
            self._write_version_file(self.checkpoint_version)


def train_partition(embs, edges, epochs=20):
    embs = embs.clone().requires_grad_()
    optimizer = torch.optim.Adagrad([embs], lr=0.1)
    for _ in range(epochs):
        lhs, rhs = embs[edges[:, 0]], embs[edges[:, 1]]
        neg = embs[torch.roll(edges[:, 1], 1)]
        loss = F.relu(1.0 - (lhs * rhs).sum(-1) + (lhs * neg).sum(-1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return embs.detach(), loss.item()


def worker():
    rank = dist.get_rank()
    path = os.path.join(tempfile.gettempdir(), f"r35_pbg_{os.environ.get('MASTER_PORT', '0')}")
    if rank == 0:
        os.makedirs(path, exist_ok=True)  # the launcher prepares the checkpoint folder
    dist.barrier()
    if rank != 0:
        time.sleep(0.3)  # stand-in: this trainer loads its entity counts first
    manager = CheckpointManager(path, rank)
    gen = torch.Generator().manual_seed(50 + rank)
    embs = torch.randn(20, 8, generator=gen)
    edges = torch.randint(0, 20, (40, 2), generator=gen)
    embs, loss = train_partition(embs, edges)
    manager.write("user", rank, embs)
    dist.barrier()  # WAITS
    manager.switch_to_new_version()
    dist.barrier()
    with open(os.path.join(path, VERSION_FILE)) as tf:
        committed = tf.read().strip()
    print(f"[rank {rank}] pass done, loss {loss:.4f}, committed version {committed}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
