"""NVIDIA Resiliency Extension: a checkpoint write that fails on one rank kills that rank before the results
exchange, so the other ranks wait in the save's finalisation for a result that never comes.

Source: NVIDIA/nvidia-resiliency-ext PR #170 ("checkpointing: fix error propagation and add test", 2025-09,
backport of #138): "Fixes error propagation during checkpoint saving by using torch's DistWrapper to send the
exception to the coordinator instead of killing the process early, and then notifies the other ranks of the
exception so they can also abort." The PR's test overrides `open()` with one that raises. Modelled:
`FileSystemWriterAsync` writing each rank's shard (`write_preloaded_data`), then the save's finalisation, where the
coordinator gathers every rank's write results (`gather_object`) and writes the metadata.

Rank 1's storage rejects its shard file (the test's raising `open()`): the exception leaves rank 1's save, and
rank 1 exits, while rank 0 waits in the gather of write results.

The bug: the write error is raised on the failing rank alone instead of being sent to the coordinator.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist

KIND = "buggy"
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
    write_results = write_preloaded_data(rank, ckpt_dir, state_dict)  # BUG
    gathered = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(write_results, gathered, dst=0)  # WAITS
    if rank == 0:
        entries = [item for result in gathered for item in result]
        with open(os.path.join(ckpt_dir, ".metadata"), "w") as f:
            f.write(repr(entries))
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
                save_checkpoint(rank, ckpt_dir, model.state_dict())  # WAITS
                print(f"rank {rank}: checkpoint iter {step} saved", flush=True)
            except CheckpointException as exc:
                print(f"rank {rank}: {exc}; training continues", flush=True)
    print(f"rank {rank}: finished 3 steps", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
