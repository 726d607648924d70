"""Ring attention: K/V blocks passed around the ring, received from the previous rank (correct).

Models zhuzilin/ring-flash-attention's ``RingComm`` (as copied in e.g. ifromeast/AI_analysis
``collective_ops/test_ring_comm_customized.py`` and hpcaitech/ColossalAI ``shardformer/layer/utils.py``):
``send_rank = (rank + 1) % world_size``, ``recv_rank = (rank - 1) % world_size``, ``send_recv`` queues a
``P2POp(isend)`` and a ``P2POp(irecv)``, ``commit`` calls ``dist.batch_isend_irecv`` and ``wait`` waits on every
request; and ``ring_flash_attn_forward`` (each step starts the next exchange, computes attention against the
current K/V block, merges the block's output with the running output through the log-sum-exp, then waits).

3 ranks of context parallelism: each holds 4 of the 12 positions of q, k and v; after ``world_size`` steps every
rank has attended to every block. The output is checked against full attention on the all-gathered tensors.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20


class RingComm:
    def __init__(self, process_group=None):
        self._process_group = process_group
        self._ops = []
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self._reqs = None
        self.send_rank = (self.rank + 1) % self.world_size
        self.recv_rank = (self.rank - 1) % self.world_size

    def send_recv(self, to_send):
        res = torch.empty_like(to_send)
        self._ops.append(dist.P2POp(dist.isend, to_send, self.send_rank, group=self._process_group))
        self._ops.append(dist.P2POp(dist.irecv, res, self.recv_rank, group=self._process_group))
        return res

    def commit(self):
        if self._reqs is not None:
            raise RuntimeError("commit called twice")
        self._reqs = dist.batch_isend_irecv(self._ops)

    def wait(self):
        if self._reqs is None:
            raise RuntimeError("wait called before commit")
        for req in self._reqs:
            req.wait()
        self._reqs = None
        self._ops = []


def block_attention(q, k, v, scale):
    scores = (q @ k.transpose(-1, -2)) * scale
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.softmax(scores, dim=-1) @ v, lse


def merge(out, lse, block_out, block_lse):
    if out is None:
        return block_out, block_lse
    new_lse = torch.logaddexp(lse, block_lse)
    return out * torch.exp(lse - new_lse) + block_out * torch.exp(block_lse - new_lse), new_lse


def ring_attention_forward(q, k, v):
    comm = RingComm()
    scale = q.shape[-1] ** -0.5
    out = lse = None
    for step in range(comm.world_size):
        if step + 1 != comm.world_size:
            next_k = comm.send_recv(k)
            next_v = comm.send_recv(v)
            comm.commit()
        block_out, block_lse = block_attention(q, k, v, scale)
        out, lse = merge(out, lse, block_out, block_lse)
        if step + 1 != comm.world_size:
            comm.wait()
            k, v = next_k, next_v
    return out


def gather_seq(t):
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t)
    return torch.cat(parts, dim=0)


def worker():
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    q, k, v = (torch.randn(4, 8, generator=g) for _ in range(3))
    out = ring_attention_forward(q, k, v)

    full_q, full_k, full_v = gather_seq(q), gather_seq(k), gather_seq(v)
    reference = torch.softmax(full_q @ full_k.T * 8 ** -0.5, dim=-1) @ full_v
    local_ref = reference[4 * rank: 4 * (rank + 1)]
    assert torch.allclose(out, local_ref, atol=1e-5), f"rank {rank}: ring attention differs from full attention"
    print(f"rank {rank}: ring attention matches (max err {(out - local_ref).abs().max():.2e})", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
