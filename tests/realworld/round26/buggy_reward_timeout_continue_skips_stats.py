"""An RL fine-tuning step whose reward loop skips a completion when the verifier times out; the reward statistics
shared by the ranks then flush on a different rollout on each rank.

Models: verl ``utils/reward_score/math_verify.py`` (``compute_score`` with a ``timeout_score`` for a verification
that times out), inclusionAI/AReaL ``areal/reward/gsm8k.py`` (any exception in the verifier is logged and scored
0.0), ltjed/multiagent-coaching ``qwen_eval_timeout.py`` (``FunctionTimedOut`` scored -1.0), OpenRLHF's
``RunningMoments`` reward normalisation; sgl-project/sglang PRs #27489 / #26923 (a rank-local queue state deciding
whether a rank enters an ``all_reduce`` inside a method: "Mismatched collectives -> watchdog").

What it does: 2 data-parallel ranks fine-tune a tiny policy (DDP) for 3 iterations; each iteration a rank samples
one completion for each of its 4 prompts (a deterministic stand-in sampler), scores it with
``_helpers_rewards.verify`` and feeds the reward to a ``RunningRewardStats`` (every 4 rewards it all-reduces the
moments over the ranks), then takes a policy-gradient step with the normalised rewards as advantages.

The bug: a completion whose verification times out is skipped with ``continue``. In iteration 1 rank 1 samples a
600-character completion; it adds 3 rewards, not 4, so its statistics do not flush in that iteration while rank 0's
do. Rank 0 waits in the moment all-reduce (``stats.add`` -> ``_flush``) while rank 1 goes on to iteration 1's
forward, where DDP waits for its one-off bucket-rebuild broadcast; both time out. A per-rank ``continue`` in
front of a method that holds a collective moves that collective to another place on that rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_rewards import RunningRewardStats, VerifierTimeout, verify

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

ITERATIONS = 3
PROMPTS_PER_ITERATION = 4


def sample_completion(rank, iteration, i):
    """Stand-in for the rollout engine: the answer is right for even i; rank 1's 2nd prompt of iteration 1 gets a
    runaway completion (600 characters of nested parentheses)."""
    if rank == 1 and iteration == 1 and i == 1:
        return "(" * 300 + ")" * 300
    answer = 7 * iteration + i
    return f"step by step ... so the result is \\boxed{{{answer if i % 2 == 0 else answer + 1}}}"


def features(rank, iteration, i):
    g = torch.Generator().manual_seed(1000 * rank + 10 * iteration + i)
    return torch.randn(4, generator=g)


def rollout(stats, rank, iteration):
    feats, rewards = [], []
    for i in range(PROMPTS_PER_ITERATION):
        completion = sample_completion(rank, iteration, i)
        try:
            reward = verify(completion, answer=7 * iteration + i)
        except VerifierTimeout as exc:
            print(f"[rank {rank}] iteration {iteration}: {exc}; skipping", flush=True)
            continue  # BUG
        stats.add(reward)  # WAITS
        feats.append(features(rank, iteration, i))
        rewards.append(reward)
    return torch.stack(feats), torch.tensor([stats.normalize(r) for r in rewards])


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    policy = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    stats = RunningRewardStats(flush_every=PROMPTS_PER_ITERATION)
    for iteration in range(ITERATIONS):
        x, advantages = rollout(stats, rank, iteration)  # WAITS
        logp = F.logsigmoid(policy(x).squeeze(-1))  # WAITS
        loss = -(advantages * logp).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"iteration {iteration}: reward mean {stats.mean:.3f} over {stats.count:.0f}, "
                  f"loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
