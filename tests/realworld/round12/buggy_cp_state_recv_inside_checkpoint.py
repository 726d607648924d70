"""Context parallelism with a serial state pass, the receive inside the activation-checkpointed region.

Source: modelled on ByteDance-Seed/VeOmni PR #1076 (``veomni/distributed/context_parallel/gdn_lossless.py``: a linear
recurrence split over the sequence; ``_StateReceive.forward`` calls ``dist.recv`` for the predecessor's final state,
``_StateSend.forward`` calls ``dist.send`` to the successor, and their backwards send / receive the state's
gradient; the review thread "Confirm the blocking state P2P survives activation recomputation": non-reentrant
activation checkpointing re-executes the forward of every op inside the checkpointed region during backward, so the
consumer issues a second ``dist.recv`` while the producer does not issue a second send) and VeOmni PR #985 (the
serial ``final_state`` P2P); ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``.

Rank 0 holds the first half of every sequence, rank 1 the second. The bug: the layer checkpoints
``_receive_and_scan``, which receives the predecessor's state and runs the scan; the send sits after the
checkpointed call. In backward, rank 1 recomputes its checkpointed region, i.e. receives again from rank 0 — which
sends nothing more in the forward sense: it waits in ``_StateSend.backward`` for the state's gradient from rank 1,
which rank 1 sends only after its recomputation. Each rank waits for the other.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 6
CHUNK = 5  # tokens per rank


class _StateReceive(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchor, src):
        state = torch.empty(anchor.shape[0], HIDDEN)
        dist.recv(state, src=src)  # WAITS
        ctx.src = src
        return state

    @staticmethod
    def backward(ctx, grad_state):
        dist.send(grad_state.contiguous(), dst=ctx.src)
        return None, None


class _StateSend(torch.autograd.Function):
    @staticmethod
    def forward(ctx, output, state, dst):
        dist.send(state.detach().contiguous(), dst=dst)
        ctx.dst = dst
        ctx.state_shape = state.shape
        return output.view_as(output)

    @staticmethod
    def backward(ctx, grad_output):
        downstream = torch.empty(ctx.state_shape)
        dist.recv(downstream, src=ctx.dst)  # WAITS
        return grad_output, downstream, None


class StatePassingMixer(nn.Module):
    """h_t = a * h_{t-1} + W x_t over the whole sequence, each rank scanning its own chunk."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(HIDDEN, HIDDEN)
        self.decay = nn.Parameter(torch.full((HIDDEN,), 0.7))

    def _scan(self, x, state):
        outputs = []
        for t in range(x.shape[1]):
            state = self.decay * state + self.inp(x[:, t])
            outputs.append(state)
        return torch.stack(outputs, dim=1), state

    def _receive_and_scan(self, x):
        rank = dist.get_rank()
        if rank > 0:
            state = _StateReceive.apply(x, rank - 1)  # WAITS
        else:
            state = x.new_zeros(x.shape[0], HIDDEN)
        return self._scan(x, state)

    def forward(self, x):
        rank, world = dist.get_rank(), dist.get_world_size()
        y, final_state = checkpoint(self._receive_and_scan, x, use_reentrant=False)  # BUG
        if rank < world - 1:
            y = _StateSend.apply(y, final_state, rank + 1)
        return y


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)  # same weights and the same full sequences on every rank
    embed = nn.Linear(3, HIDDEN)
    mixer = StatePassingMixer()
    head = nn.Linear(HIDDEN, 1)
    params = [*embed.parameters(), *mixer.parameters(), *head.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.05)
    sequences = torch.randn(4, CHUNK * dist.get_world_size(), 3)
    targets = sequences.sum(dim=-1, keepdim=True).cumsum(dim=1) * 0.1
    local = slice(rank * CHUNK, (rank + 1) * CHUNK)
    for step in range(3):
        y = mixer(embed(sequences[:, local]))
        loss = nn.functional.mse_loss(head(y), targets[:, local])
        loss.backward()  # WAITS
        for p in params:  # the replicated weights' gradients, summed over the sequence's chunks
            dist.all_reduce(p.grad)
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: chunk loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
