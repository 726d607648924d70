"""Evaluation results collected through a shared temp dir, part files named by the global rank.

Models mmcv / mmdet ``apis/test.py`` ``collect_results_cpu`` (each rank dumps ``part_{rank}.pkl`` into a
shared ``tmpdir``, ``dist.barrier()``, rank 0 loads ``part_0`` ... ``part_{world_size-1}``, interleaves them and
removes the dir) on a multi-node launch where ``LOCAL_RANK`` restarts at 0 on every node.

4 ranks stand for 2 nodes of 2 (``GPUS_PER_NODE``) sharing one file system; the script keeps the local rank
for picking its device. After a short training run each rank evaluates its ``DistributedSampler`` shard of
the validation set; the parts are collected on rank 0, which scores them and broadcasts the metric.
Correct: the part file is named by the global rank, so the 4 ranks write 4 distinct files and rank 0 finds
every one of them after the barrier.
"""
import os
import pickle
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

GPUS_PER_NODE = 2
VAL_SIZE = 40


def shared_tmpdir(prefix):
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def get_dist_info():
    rank = dist.get_rank()
    local_rank = int(os.environ.get("SLURM_LOCALID", rank % GPUS_PER_NODE))
    return rank, local_rank, dist.get_world_size()


def collect_results_cpu(result_part, size, tmpdir):
    rank, local_rank, world_size = get_dist_info()
    with open(os.path.join(tmpdir, f"part_{rank}.pkl"), "wb") as f:
        pickle.dump(result_part, f)
    dist.barrier()
    if rank != 0:
        return None
    part_list = []
    for i in range(world_size):
        with open(os.path.join(tmpdir, f"part_{i}.pkl"), "rb") as f:
            part_list.append(pickle.load(f))
    ordered = [item for group in zip(*part_list) for item in group]
    return ordered[:size]


def dataset():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(VAL_SIZE, 5, generator=g)
    y = (x[:, 0] - x[:, 1] > 0).long()
    return TensorDataset(torch.arange(VAL_SIZE), x, y)


def train(model, opt):
    g = torch.Generator().manual_seed(dist.get_rank())
    for _ in range(5):
        x = torch.randn(16, 5, generator=g)
        y = (x[:, 0] - x[:, 1] > 0).long()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def evaluate(model, tmpdir):
    data = dataset()
    sampler = DistributedSampler(data, shuffle=False)
    results = []
    with torch.no_grad():
        for idx, x, y in DataLoader(data, batch_size=8, sampler=sampler):
            pred = model(x).argmax(dim=1)
            results.extend(zip(idx.tolist(), (pred == y).tolist()))
    gathered = collect_results_cpu(results, len(data), tmpdir)
    metric = [None]
    if dist.get_rank() == 0:
        metric[0] = sum(ok for _, ok in gathered) / len(gathered)
    dist.broadcast_object_list(metric, src=0)
    return metric[0]


def worker():
    torch.manual_seed(0)
    tmpdir = shared_tmpdir("r24_parts_")
    model = DDP(nn.Linear(5, 2))
    try:
        train(model, torch.optim.SGD(model.parameters(), lr=0.5))
        acc = evaluate(model.module, tmpdir)
        dist.barrier()
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(tmpdir, ignore_errors=True)
    if dist.get_rank() == 0:
        print(f"val accuracy {acc:.3f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
