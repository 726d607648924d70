"""NVIDIA Resiliency Extension, fixed: a checkpoint write error on one rank is sent to the coordinator with the
other ranks' write results, and the coordinator tells every rank, so all of them abort the save together.

Source: NVIDIA/nvidia-resiliency-ext PR #170 (2025-09, backport of #138): "using torch's DistWrapper to send
the exception to the coordinator instead of killing the process early, and then notifies the other ranks of
the exception so they can also abort." Modelled: `FileSystemWriterAsync` (`write_preloaded_data`) and the
save's finalisation (`gather_object` of write results, then the coordinator's verdict). Rank 1's storage still
rejects its shard (the PR test's raising `open()`); every rank gets the same CheckpointException and the
training loop goes on without that checkpoint.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class CheckpointException(RuntimeError):
    def __init__(self, failures):
        super().__init__(f"checkpoint save failed on ranks {sorted(failures)}: {failures}")
        self.failures = failures


def opener_for(rank):
    """The PR's test swaps `open()` for one that raises; here rank 1's storage target rejects the write."""
    if rank == 1:
        def failing_open(path, mode="r"):
            raise OSError(28, "No space left on device", path)
        return failing_open
    return open


def write_preloaded_data(rank, ckpt_dir, state_dict):
    path = os.path.join(ckpt_dir, f"__{rank}_0.distcp")
    with opener_for(rank)(path, "wb") as f:
        torch.save(state_dict, f)
    return [(rank, os.path.basename(path), sum(t.numel() for t in state_dict.values()))]


def save_checkpoint(rank, ckpt_dir, state_dict):
    try:
        write_results = write_preloaded_data(rank, ckpt_dir, state_dict)
    except Exception as exc:  # the PR: hand the exception to the coordinator instead of dying here
        write_results = exc
    gathered = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(write_results, gathered, dst=0)
    verdict = [None]
    if rank == 0:
        failures = {r: repr(res) for r, res in enumerate(gathered) if isinstance(res, BaseException)}
        if failures:
            verdict[0] = failures
        else:
            entries = [item for result in gathered for item in result]
            with open(os.path.join(ckpt_dir, ".metadata"), "w") as f:
                f.write(repr(entries))
    dist.broadcast_object_list(verdict, src=0)  # every rank learns the outcome
    if verdict[0] is not None:
        raise CheckpointException(verdict[0])
    dist.barrier()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="nvrx_ckpt_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    root = box[0]
    model = torch.nn.Linear(8, 8)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    for step in range(1, 4):
        x = torch.randn(4, 8)
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.data -= 0.01 * p.grad / dist.get_world_size()
            p.grad = None
        if step == 2:
            ckpt_dir = os.path.join(root, f"iter_{step:07d}")
            os.makedirs(ckpt_dir, exist_ok=True)
            try:
                save_checkpoint(rank, ckpt_dir, model.state_dict())
                print(f"rank {rank}: checkpoint iter {step} saved", flush=True)
            except CheckpointException as exc:
                print(f"rank {rank}: {exc}; training continues", flush=True)
    print(f"rank {rank}: finished 3 steps", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
