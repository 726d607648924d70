"""mmengine-style ``collect_results_cpu`` with a fresh temporary directory per collection, for two evaluations in a row.

Models: open-mmlab/mmengine ``mmengine/dist/dist.py`` ``collect_results_cpu`` with its default ``tmpdir=None``:
rank 0 makes a fresh ``tempfile.mkdtemp`` and broadcasts its name as a uint8 tensor; each rank pickles
``part_{rank}.pkl``, ``barrier()``, the other ranks return ``None``, rank 0 loads the parts, interleaves them and
removes the directory later; the val-then-test evaluation at the end of a run.

What it does: a model is evaluated on a validation split and then on a test split, each sharded across the ranks.
``evaluate`` collects the per-sample predictions on rank 0; rank 0 then scores them (``compute_metrics`` stands in
for a 1.5 s COCO-style evaluation) and removes that collection's directory; rank 0 broadcasts the final metrics at
the end. Rank 1 writes its test part while rank 0 is still scoring the validation results, but into the test
collection's own directory (named by rank 0's broadcast, which rank 1 can only pass once rank 0 is there), so rank
0's clean-up of the validation directory cannot touch it.
"""
import os
import pickle
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def collect_results_cpu(result_part, size, tmpdir=None):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if tmpdir is None:
        dir_tensor = torch.full((512,), 32, dtype=torch.uint8)
        if rank == 0:
            path = tempfile.mkdtemp(prefix="r14_dist_test_")
            encoded = torch.tensor(bytearray(path.encode()), dtype=torch.uint8)
            dir_tensor[:len(encoded)] = encoded
        dist.broadcast(dir_tensor, 0)
        tmpdir = dir_tensor.numpy().tobytes().decode().rstrip()
    else:
        os.makedirs(tmpdir, exist_ok=True)
    with open(os.path.join(tmpdir, f"part_{rank}.pkl"), "wb") as f:
        pickle.dump(result_part, f)
    dist.barrier()
    if rank != 0:
        return None, tmpdir
    parts = []
    for i in range(world_size):
        with open(os.path.join(tmpdir, f"part_{i}.pkl"), "rb") as f:
            parts.append(pickle.load(f))
    ordered = [r for group in zip(*parts) for r in group]
    return ordered[:size], tmpdir


def compute_metrics(results):
    """Stand-in for a COCO-style evaluation of the collected predictions (1.5 s on rank 0)."""
    time.sleep(1.5)
    return sum(r["correct"] for r in results) / len(results)


def evaluate(model, data, labels, tmpdir):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    results = []
    with torch.no_grad():
        for i in range(rank, len(data), world_size):
            pred = model(data[i:i + 1]).argmax(1).item()
            results.append({"idx": i, "correct": int(pred == labels[i].item())})
    collected, used_dir = collect_results_cpu(results, len(data), tmpdir)
    if rank != 0:
        return None
    accuracy = compute_metrics(collected)
    shutil.rmtree(used_dir, ignore_errors=True)
    return accuracy


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r14_work_dir_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    work_dir = box[0]
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(5, 3)
        g = torch.Generator().manual_seed(1)
        val_x, val_y = torch.randn(12, 5, generator=g), torch.randint(0, 3, (12,), generator=g)
        test_x, test_y = torch.randn(10, 5, generator=g), torch.randint(0, 3, (10,), generator=g)
        metrics = {"val": evaluate(model, val_x, val_y, tmpdir=None),
                   "test": evaluate(model, test_x, test_y, tmpdir=None)}
        box = [metrics]
        dist.broadcast_object_list(box, src=0)
        print(f"rank {rank}: metrics {box[0]}")
    finally:
        if rank == 0:
            shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
