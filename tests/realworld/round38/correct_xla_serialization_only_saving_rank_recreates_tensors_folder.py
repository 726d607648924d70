"""PyTorch/XLA `xser.save(master_only=True)`: only the process that writes the tensors removes and re-creates the
`<path>.tensors` folder (correct).

Source: pytorch/xla PR #4007 ("Fixing a race where processes other than ones saving can remove chkpt directory");
`torch_xla/utils/serialization.py`: `_rewrite_data`, `save`, `load`.
The PR's fix guards the folder's deletion and creation with `if save_tensors:` -- the flag that says whether this
process writes the data (`should_write_data`, the master ordinal with `master_only=True`). The other processes
still walk the data to build the same tensor references but leave the folder alone. After the rendezvous every rank
loads the checkpoint to resume from it, and finds every tensor file.

Stand-ins: `_sync_to_cpu` (the device-to-host transfer `_xla_sync_multi` does per tensor) takes 0.3 s per tensor;
after each step rank 1 spends 0.75 s more than rank 0 fetching its next batch, so it reaches the save later;
`xm.rendezvous` is `dist.barrier`. The model is a tiny two-layer MLP on CPU, data built in code.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class TensorReference:
    def __init__(self, tid):
        self.tid = tid


def _get_tensors_folder(path):
    return path + ".tensors"


def _get_tensor_file(path, tid):
    return os.path.join(path, f"tensor_{tid}.pt")


def _sync_to_cpu(tensor):
    time.sleep(0.3)  # stand-in: the device-to-host transfer of one tensor
    return tensor.detach().cpu().clone()


def _rewrite_data(path, data, save_tensors):
    if save_tensors:
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.mkdir(path)
    rewritten = {}
    for tid, (name, tensor) in enumerate(data.items()):
        if save_tensors:
            torch.save(_sync_to_cpu(tensor), _get_tensor_file(path, tid))
        rewritten[name] = TensorReference(tid)
    return rewritten


def save(data, path, master_only=True):
    should_write_data = not master_only or dist.get_rank() == 0
    ref_data = _rewrite_data(_get_tensors_folder(path), data, should_write_data)
    if should_write_data:
        torch.save({name: ref.tid for name, ref in ref_data.items()}, path)


def load(path):
    refs = torch.load(path)
    folder = _get_tensors_folder(path)
    return {name: torch.load(_get_tensor_file(folder, tid)) for name, tid in refs.items()}


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1 + rank)
    x, y = torch.randn(16, 4, generator=g), torch.randn(16, 1, generator=g)
    for _ in range(2):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        optimizer.step()
        if rank == 1:
            time.sleep(0.75)  # stand-in: rank 1's slower input pipeline fetching its next batch
    ckpt_dir = os.path.join(tempfile.gettempdir(), f"r38_xla_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, "model.pt")
    save(model.state_dict(), path, master_only=True)
    dist.barrier()  # xm.rendezvous("checkpoint saved")
    state = load(path)
    model.load_state_dict(state)
    print(f"[rank {rank}] resumed from {path}, loss {loss.item():.4f}")
    dist.barrier()  # every rank has loaded before rank 0 removes the checkpoint
    if rank == 0:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
