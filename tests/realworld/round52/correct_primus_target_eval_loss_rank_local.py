"""AMD-AGI/Primus PR #854 (MLPerf llama3.1 8B / gpt-oss 20B examples, 2026), as fixed: the evaluation loss that
the target-eval-loss early stop reads is reduced across the data-parallel ranks first.

What the code does: a small data-parallel regression run in the shape of Primus's Megatron trainer. Every rank
trains the same parameters on its own training shard (the gradients are averaged with one all-reduce per step), and
every ``EVAL_INTERVAL`` steps it evaluates on its own validation shard. The squared-error sum and the sample count
are all-reduced together (the PR's fix: numerator and denominator reduced, then divided), so every rank compares
the same global loss with ``TARGET_EVAL_LOSS`` and all of them stop at step 12 (global loss about 0.074), although
rank 1's own shard was under the target from step 8. After the loop every rank meets a barrier before the run-stop
log.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
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
    dist.all_reduce(grad)
    grad /= world
    return params - LR * grad


def evaluate(params, shard):
    x, y = shard
    err = forward(params, x) - y
    totals = torch.tensor([float((err**2).sum()), float(err.numel())], dtype=torch.float64)
    dist.all_reduce(totals)  # numerator and denominator over every data-parallel rank
    return (totals[0] / totals[1]).item()


def train(rank, world):
    train_shard = make_shard(rank, 64, 100)
    val_shard = make_shard(rank, 32, 200)
    params = torch.zeros(3)
    for step in range(1, TRAIN_ITERS + 1):
        params = train_step(params, train_shard, world)
        if step % EVAL_INTERVAL == 0:
            eval_loss = evaluate(params, val_shard)
            if eval_loss <= TARGET_EVAL_LOSS:
                print(f"[rank {rank}] early stop at step {step}: eval loss {eval_loss:.4f}", flush=True)
                return step
    return TRAIN_ITERS


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    stopped_at = train(rank, world)
    dist.barrier()
    print(f"[rank {rank}] run_stop after step {stopped_at}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
