"""A side-channel TCPStore (for a rollout/metrics sidecar) hosted by rank 0 on a port it publishes to the others.

Models: pytorch/pytorch issue #53395 (one process picks the rendezvous port, every process uses that value) and
vllm-project/vllm PR #50969 ("Bind RayExecutorV2 TCPStore before publishing its port": rank 0 creates the
``TCPStore`` with port 0, lets the kernel choose, and only then publishes ``store.port``), with vLLM's store-backed
"stateless" group as the shape of the channel.

What it does: after ``init_process_group`` (torchrun's rendezvous), the trainer opens a second, store-only channel
so that a sidecar can later read per-rank statistics without joining the collective group. Rank 0 creates the
master ``TCPStore`` on port 0 (no wait for workers), broadcasts the port it was given with
``broadcast_object_list``; the other ranks connect to that port. Every rank publishes its shard statistics, rank 0
sums them, and a barrier keeps rank 0's store alive until everyone is done with it.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

HOST = "127.0.0.1"


class SideChannel:
    def __init__(self, store, rank, world_size):
        self.store, self.rank, self.world_size = store, rank, world_size

    def publish(self, name, value):
        self.store.set(f"{name}/{self.rank}", str(value))

    def collect(self, name):
        keys = [f"{name}/{r}" for r in range(self.world_size)]
        self.store.wait(keys)
        return [float(self.store.get(k)) for k in keys]


def open_side_channel():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        store = dist.TCPStore(HOST, 0, world_size, is_master=True,
                              timeout=timedelta(seconds=TIMEOUT), wait_for_workers=False)
        port = [store.port]
    else:
        port = [None]
    dist.broadcast_object_list(port, src=0)
    if rank != 0:
        store = dist.TCPStore(HOST, port[0], world_size, is_master=False,
                              timeout=timedelta(seconds=TIMEOUT))
    return SideChannel(store, rank, world_size)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    shard = torch.randn(64)
    total = shard.sum().clone()
    dist.all_reduce(total)
    channel = open_side_channel()
    channel.publish("tokens", shard.numel())
    channel.publish("loss_sum", float(shard.abs().sum()))
    if rank == 0:
        tokens = sum(channel.collect("tokens"))
        print(f"side channel: {tokens:.0f} tokens, global sum {total.item():.3f}")
    dist.barrier()
    print(f"rank {rank}: done")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
