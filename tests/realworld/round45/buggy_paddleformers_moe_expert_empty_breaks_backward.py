"""PaddleFormers: an expert-parallel rank that receives no tokens returns a fresh empty tensor, cutting its backward.

Source: PaddlePaddle/PaddleFormers PR #3010 ("[Unified MoE Layer] Fix EP Hang when No Tokens are Distributed by the
Rank"), the unified MoE layer's expert computation between the dispatch and combine all-to-alls. When a rank received
no tokens, its expert computation returned `paddle.empty()`, "a new Tensor that breaks the gradient flow": that rank
does no backward communication and finishes its backward early, while the other ranks do the backward all-to-all and
time out waiting for it. Fix: return `input` instead of the new empty tensor, so the graph stays connected.

PaddleFormers is Paddle; here the same layer runs on torch (gloo, CPU, 2 ranks): an autograd all-to-all whose backward
is the reverse all-to-all, a router whose probabilities weight the combined output, and after the backward the
data-parallel all-reduce of the router's gradient. Every token picks rank 0's expert this step, so rank 1's expert
receives none. Bug: the empty expert output is a new tensor. Fix (the PR): return the (empty) input.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

HIDDEN = 4


class AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, in_splits, out_splits):
        ctx.in_splits, ctx.out_splits = in_splits, out_splits
        out = x.new_empty((sum(out_splits), x.shape[1]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_in = grad.new_empty((sum(ctx.in_splits), grad.shape[1]))
        dist.all_to_all_single(grad_in, grad.contiguous(), ctx.in_splits, ctx.out_splits)  # WAITS
        return grad_in, None, None


class MoELayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(HIDDEN, 2)
        self.expert = torch.nn.Linear(HIDDEN, HIDDEN)

    def expert_compute(self, x):
        if x.shape[0] == 0:
            return torch.empty(0, HIDDEN)  # BUG
        return self.expert(x)

    def forward(self, x):
        probs = torch.softmax(self.router(x), dim=-1)
        world = dist.get_world_size()
        # routing for this step: every token goes to rank 0's expert
        send = [x.shape[0] if r == 0 else 0 for r in range(world)]
        counts = torch.tensor(send)
        recv_counts = torch.empty_like(counts)
        dist.all_to_all_single(recv_counts, counts)
        recv = recv_counts.tolist()
        dispatched = AllToAll.apply(x, send, recv)
        expert_out = self.expert_compute(dispatched)
        combined = AllToAll.apply(expert_out, recv, send)
        return combined * probs[:, :1]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    embed = torch.nn.Embedding(16, HIDDEN)
    layer = MoELayer()
    tokens = torch.tensor([1 + rank, 3 + rank, 5 + rank])
    out = layer(embed(tokens))
    loss = out.pow(2).mean()
    loss.backward()  # WAITS
    grad = layer.router.weight.grad.clone()
    dist.all_reduce(grad)  # WAITS
    print(f"[rank {rank}] loss {loss.item():.4f}, router grad norm {grad.norm().item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
