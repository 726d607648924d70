"""A side-channel TCPStore (for a rollout/metrics sidecar) whose port every rank picks for itself.

Models: pytorch/pytorch issue #53395 ("How to solve dist.init_process_group from hanging"): each process called
``find_free_port()`` and set its own port; the maintainers' answer is that one process picks the port and every
process must use that same value. The side-channel shape follows vLLM's ``get_open_port()`` plus a store-backed
"stateless" group, and vllm-project/vllm PR #50969 (rank 0 binds the ``TCPStore`` first, with port 0, and only
then publishes the port it got).

What it does: after ``init_process_group`` (torchrun's rendezvous), the trainer opens a second, store-only channel
so that a sidecar can later read per-rank statistics without joining the collective group: rank 0 hosts a
``TCPStore``, every rank connects to it and publishes its shard statistics, rank 0 sums them.

The bug: ``open_side_channel`` calls ``get_open_port()`` on every rank, so rank 0 listens on one free port and
rank 1 connects to another, on which nobody listens. Rank 0 waits in the master ``TCPStore`` for its second member;
rank 1 retries its connection; both give up when the store timeout (``TIMEOUT``) runs out.
"""
import socket
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HOST = "127.0.0.1"


def get_open_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class SideChannel:
    def __init__(self, store, rank, world_size):
        self.store, self.rank, self.world_size = store, rank, world_size

    @classmethod
    def create(cls, port, rank, world_size):
        store = dist.TCPStore(HOST, port, world_size, is_master=(rank == 0),  # WAITS
                              timeout=timedelta(seconds=TIMEOUT), wait_for_workers=True)
        return cls(store, rank, world_size)

    def publish(self, name, value):
        self.store.set(f"{name}/{self.rank}", str(value))

    def collect(self, name):
        keys = [f"{name}/{r}" for r in range(self.world_size)]
        self.store.wait(keys)
        return [float(self.store.get(k)) for k in keys]


def open_side_channel():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    port = get_open_port()  # BUG
    return SideChannel.create(port, rank, world_size)  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    shard = torch.randn(64)
    total = shard.sum().clone()
    dist.all_reduce(total)
    channel = open_side_channel()  # WAITS
    channel.publish("tokens", shard.numel())
    channel.publish("loss_sum", float(shard.abs().sum()))
    if rank == 0:
        tokens = sum(channel.collect("tokens"))
        print(f"side channel: {tokens:.0f} tokens, global sum {total.item():.3f}")
    dist.barrier()
    print(f"rank {rank}: done")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
