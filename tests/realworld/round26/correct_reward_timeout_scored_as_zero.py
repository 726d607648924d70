"""An RL fine-tuning step whose reward loop scores a completion 0.0 when the verifier times out; the reward
statistics shared by the ranks flush on the same rollout everywhere.

Models: verl ``utils/reward_score/math_verify.py`` (``compute_score`` with a ``timeout_score``), inclusionAI/AReaL
``areal/reward/gsm8k.py`` (any exception in the verifier is logged and scored 0.0), ltjed/multiagent-coaching
``qwen_eval_timeout.py`` (``FunctionTimedOut`` scored -1.0), OpenRLHF's ``RunningMoments`` reward normalisation;
sgl-project/sglang PR #27489 (the fix: every rank enters the ``all_reduce``, an empty contribution is a no-op).

What it does: 2 data-parallel ranks fine-tune a tiny policy (DDP) for 3 iterations; each iteration a rank samples
one completion for each of its 4 prompts (a deterministic stand-in sampler), scores it with
``_helpers_rewards.verify`` and feeds the reward to a ``RunningRewardStats`` (every 4 rewards it all-reduces the
moments over the ranks), then takes a policy-gradient step with the normalised rewards as advantages.

Why it is right although the verifier raises on rank 1 alone (iteration 1, a 600-character completion) and the
exception is caught there: the handler scores the completion ``TIMEOUT_SCORE`` and the loop goes on to
``stats.add``, so every rank adds 4 rewards per iteration and the moment all-reduce inside ``add`` runs at the
same place on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_rewards import RunningRewardStats, VerifierTimeout, verify

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

ITERATIONS = 3
PROMPTS_PER_ITERATION = 4
TIMEOUT_SCORE = 0.0


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
            print(f"[rank {rank}] iteration {iteration}: {exc}; scored {TIMEOUT_SCORE}", flush=True)
            reward = TIMEOUT_SCORE
        stats.add(reward)
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
        x, advantages = rollout(stats, rank, iteration)
        logp = F.logsigmoid(policy(x).squeeze(-1))
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
