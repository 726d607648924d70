"""mmcv's ``collect_results_cpu`` on two nodes, its temporary directory made under ``.dist_test`` in the shared work dir.

Models open-mmlab/mmaction2 PR #292, open-mmlab/mmdetection PR #4017 and open-mmlab/mmpose PR #818 (see the buggy
twin): rank 0 makes the directory with ``tempfile.mkdtemp(dir='.dist_test')`` after ``mmcv.mkdir_or_exist('.dist_test')``
-- a path relative to the job's working directory, which every node of a cluster job shares -- broadcasts it as a
512-byte ``uint8`` tensor, every rank dumps ``part_{rank}.pkl`` there, a barrier, rank 0 loads the parts in order,
drops the ``DistributedSampler`` padding and removes the directory (mmcv ``engine/test.py`` ``collect_results_cpu``).

Written for this corpus (nothing copied). Four ranks play two nodes of two (node = ``rank // 2``) on one host;
``host_path`` maps ``/tmp`` to each node's own scratch directory and relative paths to one directory shared by both
nodes. A fixed linear classifier is evaluated on 10 samples split ``DistributedSampler``-style (padded to 12); rank 0
prints the 10 results in dataset order.
"""
import datetime
import os
import pickle
import shutil
import tempfile

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

RANKS_PER_NODE = 2  # the job's --nproc-per-node on each emulated node
NUM_SAMPLES = 10


def run_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_mmcv_{tag}")


def host_path(path, rank):
    """Where a path lands on this rank's machine: /tmp is per node, the work dir is shared."""
    if path == "/tmp" or path.startswith("/tmp/"):
        node = rank // RANKS_PER_NODE
        return os.path.join(run_root(), f"node{node}_tmp", path[len("/tmp/"):])
    return os.path.join(run_root(), "shared_workdir", path)


def mkdtemp_on_host(rank, dir):
    """tempfile.mkdtemp(dir=dir) on this rank's machine; returns the path as the program sees it."""
    real = tempfile.mkdtemp(dir=host_path(dir, rank))
    return os.path.join(dir, os.path.basename(real))


def collect_results_cpu(result_part, size, rank, world_size):
    MAX_LEN = 512
    dir_tensor = torch.full((MAX_LEN,), 32, dtype=torch.uint8)
    if rank == 0:
        tmpdir = mkdtemp_on_host(rank, ".dist_test")
        encoded = torch.tensor(bytearray(tmpdir.encode()), dtype=torch.uint8)
        dir_tensor[: len(encoded)] = encoded
    dist.broadcast(dir_tensor, 0)
    tmpdir = dir_tensor.numpy().tobytes().decode().rstrip()
    with open(host_path(os.path.join(tmpdir, f"part_{rank}.pkl"), rank), "wb") as f:
        pickle.dump(result_part, f)
    dist.barrier()
    if rank != 0:
        return None
    part_list = []
    for i in range(world_size):
        with open(host_path(os.path.join(tmpdir, f"part_{i}.pkl"), rank), "rb") as f:
            part_list.append(pickle.load(f))
    ordered_results = []
    for res in zip(*part_list):
        ordered_results.extend(list(res))
    ordered_results = ordered_results[:size]
    shutil.rmtree(host_path(tmpdir, rank))
    return ordered_results


def multi_gpu_test(weight, data, labels, rank, world_size):
    per_rank = -(-len(data) // world_size)
    indices = list(range(len(data))) + list(range(per_rank * world_size - len(data)))  # DistributedSampler padding
    results = []
    for idx in indices[rank::world_size]:
        pred = int((data[idx] @ weight).argmax())
        results.append({"idx": idx, "pred": pred, "correct": pred == int(labels[idx])})
    return collect_results_cpu(results, len(data), rank, world_size)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        shutil.rmtree(run_root(), ignore_errors=True)
        for d in ("node0_tmp", "node1_tmp", "shared_workdir/.dist_test"):
            os.makedirs(os.path.join(run_root(), d), exist_ok=True)
    dist.barrier()
    g = torch.Generator().manual_seed(0)
    data = torch.randn(NUM_SAMPLES, 6, generator=g)
    weight = torch.randn(6, 3, generator=g)
    labels = (data @ weight + 0.5 * torch.randn(NUM_SAMPLES, 3, generator=g)).argmax(dim=1)
    results = multi_gpu_test(weight, data, labels, rank, world_size)
    if rank == 0:
        acc = sum(r["correct"] for r in results) / len(results)
        print(f"evaluated {len(results)} samples in order {[r['idx'] for r in results]}; accuracy {acc:.2f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(run_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
