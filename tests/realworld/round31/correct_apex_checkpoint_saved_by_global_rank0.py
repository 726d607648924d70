"""NVIDIA apex's ImageNet example with the checkpoint saved by local rank 0 of the master node only.

Models: NVIDIA/apex issue #886 ("save_checkpoint corrupted"): "Saving a checkpoint when local_rank==0 here
[examples/imagenet/main_amp.py] will have one process per node writing to the same location and thus corrupt the
checkpoint if nodes > 1", reported with the load error "RuntimeError: storage has wrong size: expected
4249925191133211469 got 65536"; the issue names the fix: check that the process is local rank 0 *and* on the
master node (global rank 0).
Code modelled (written here, not copied): ``examples/imagenet/main_amp.py`` -- ``main`` (after every epoch
``prec1 = validate(...)``, then ``if args.local_rank == 0:`` ``is_best``, ``best_prec1``, ``save_checkpoint``),
``validate`` (``reduce_tensor``: the top-1 all-reduced and divided by the world size), ``save_checkpoint``
(``torch.save(state, 'checkpoint.pth.tar')``, then ``shutil.copyfile`` to ``model_best.pth.tar`` when best) -- and
a final evaluation of ``model_best.pth.tar`` by global rank 0 while the others wait in a barrier.

The fix modelled is the one the issue names: the save is guarded by ``local_rank == 0`` *and* global rank 0, so one
process in the job writes the shared checkpoint.
2 ranks standing for 2 nodes of 1 GPU each (each rank's local rank is 0), the checkpoint folder standing for the
shared file system, writes in 10 pieces 0.08 s apart, node 1 0.55 s behind node 0 after epoch 2: only rank 0
writes and copies; it loads ``model_best.pth.tar`` and both ranks meet in the final barrier.
"""

import datetime
import io
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

GPUS_PER_NODE = 1
WRITE_PIECES = 10
PIECE_SECONDS = 0.08
NODE_SKEW_SECONDS = {0: 0.0, 1: 0.55}


def shared_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_apex_{tag}")


def shared_fs_write(data, path):
    piece = -(-len(data) // WRITE_PIECES)
    with open(path, "wb") as f:
        for start in range(0, len(data), piece):
            f.write(data[start : start + piece])
            f.flush()
            time.sleep(PIECE_SECONDS)


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = os.path.join(shared_dir(), filename)
    shared_fs_write(buffer.getvalue(), path)
    if is_best:
        shutil.copyfile(path, os.path.join(shared_dir(), "model_best.pth.tar"))


def reduce_tensor(tensor, world_size):
    rt = tensor.clone()
    dist.all_reduce(rt)
    return rt / world_size


def validate(model, val_x, val_y, world_size):
    with torch.no_grad():
        prec1 = (model(val_x).argmax(-1) == val_y).float().mean() * 100
    return reduce_tensor(prec1, world_size).item()


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = rank % GPUS_PER_NODE
    if rank == 0:
        shutil.rmtree(shared_dir(), ignore_errors=True)
        os.makedirs(shared_dir())
    dist.barrier()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 48), nn.ReLU(), nn.Linear(48, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(10 + rank)
    best_prec1 = 0.0
    for epoch in range(2):
        for _ in range(4):
            x, y = torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        prec1 = validate(model, torch.randn(32, 32, generator=g), torch.randint(0, 10, (32,), generator=g), world_size)
        time.sleep(NODE_SKEW_SECONDS[rank] if epoch == 1 else 0.0)
        if local_rank == 0 and rank == 0:
            is_best = prec1 > best_prec1
            best_prec1 = max(prec1, best_prec1)
            state = {"epoch": epoch + 1, "arch": "mlp", "state_dict": model.module.state_dict(),
                     "best_prec1": best_prec1, "optimizer": optimizer.state_dict()}
            save_checkpoint(state, is_best or epoch == 1)
            print(f"[rank {rank}] epoch {epoch + 1}: prec@1 {prec1:.3f}, saved checkpoint", flush=True)
    if rank == 0:
        best = torch.load(os.path.join(shared_dir(), "model_best.pth.tar"), weights_only=False)
        model.module.load_state_dict(best["state_dict"])
        print(f"evaluating model_best.pth.tar from epoch {best['epoch']} (best prec@1 {best['best_prec1']:.3f})", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(shared_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
