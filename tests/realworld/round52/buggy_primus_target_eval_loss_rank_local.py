"""AMD-AGI/Primus PR #854 (MLPerf llama3.1 8B / gpt-oss 20B examples, 2026): the target-eval-loss early stop read
a validation loss that each data-parallel rank had computed over its own validation shard only.

What the code does: a small data-parallel regression run in the shape of Primus's Megatron trainer. Every rank
trains the same parameters on its own training shard (the gradients are averaged with one all-reduce per step), and
every ``EVAL_INTERVAL`` steps it evaluates on its own validation shard. MLPerf training stops as soon as the
evaluation loss reaches ``TARGET_EVAL_LOSS``; after the loop, every rank meets a barrier before the run-stop log.

The bug: the loss compared with the target is the rank-local mean. The two shards are not alike (rank 1's labels
are much less noisy), so at step 8 rank 1's local loss (about 0.056) is under the target (0.075) while rank 0's
(about 0.152) is not: rank 1 leaves the training loop alone and waits in the end-of-run barrier, while rank 0 goes
on to step 9 and waits in the gradient all-reduce. The PR's fix (the correct twin) all-reduces the loss numerator
and denominator across the data-parallel ranks, so every rank sees the same global loss and stops at the same step
(step 12 here, global loss about 0.074).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

TARGET_EVAL_LOSS = 0.075
EVAL_INTERVAL = 2
TRAIN_ITERS = 24
LR = 0.1
LABEL_NOISE = (0.35, 0.1)  # per data-parallel shard


def make_shard(rank, n, seed):
    gen = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, 2, generator=gen)
    y = x @ torch.tensor([1.5, -0.5]) + 0.3 + LABEL_NOISE[rank] * torch.randn(n, generator=gen)
    return x, y


def forward(params, x):
    return x @ params[:2] + params[2]


def train_step(params, shard, world):
    x, y = shard
    err = forward(params, x) - y
    grad = torch.cat([2 * (err[:, None] * x).mean(0), (2 * err).mean().view(1)])
    dist.all_reduce(grad)  # WAITS
    grad /= world
    return params - LR * grad


def evaluate(params, shard):
    x, y = shard
    err = forward(params, x) - y
    return (err**2).mean().item()  # this rank's shard only


def train(rank, world):
    train_shard = make_shard(rank, 64, 100)
    val_shard = make_shard(rank, 32, 200)
    params = torch.zeros(3)
    for step in range(1, TRAIN_ITERS + 1):
        params = train_step(params, train_shard, world)  # WAITS
        if step % EVAL_INTERVAL == 0:
            eval_loss = evaluate(params, val_shard)
            if eval_loss <= TARGET_EVAL_LOSS:  # BUG
                print(f"[rank {rank}] early stop at step {step}: eval loss {eval_loss:.4f}", flush=True)
                return step
    return TRAIN_ITERS


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    stopped_at = train(rank, world)  # WAITS
    dist.barrier()  # WAITS
    print(f"[rank {rank}] run_stop after step {stopped_at}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
