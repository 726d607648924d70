"""OpenTau (pi07 policy) -- in-training simulation eval with the branch all-reduce gated off on the independent
rollout path (PR #409).

Source: TensorAuto/OpenTau PR #409 ("fix(train,pi07): stabilize multi-rank in-training sim eval (OOM + desync)",
commit 6b29a01). Modelled on ``src/opentau/policies/pi07/low_level/modeling_pi07_low_level.py``
(``_global_or_branch_decisions``: one SUM all-reduce of the ``embed_prefix`` branch flags, added so that every rank
takes the same branch under FSDP / ZeRO-3; ``embed_prefix``; ``sample_actions``) and ``src/opentau/scripts/train.py``
(the eval step: ``eval_policy_all`` on each rank, then ``gather_object([eval_info])`` across processes).

What it does: the policy trains under DDP; every training forward goes through ``embed_prefix``, which OR-reduces
"does my micro-batch have response / subgoal / metadata tokens" across ranks -- training is lockstep, so this is
fine. At the eval step each rank rolls out its own episodes in its own simulated task, calling ``sample_actions``
(which also goes through ``embed_prefix``) once per environment step, and the ranks then gather their eval info.

The fix (PR #409): ``_global_or_branch_decisions`` takes ``sync_across_ranks`` (default ``True``, the training and
lockstep-validation path) and ``sample_actions`` -- the independent per-rank rollout entry point -- passes
``sync_across_ranks=False``, so a rollout forward fires no collective and each rank returns its local branch decision
(safe with replicated parameters, which the PR makes train.py insist on). Episodes of 3 and 5 steps then meet only in
the post-eval ``gather_object``.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

STEPS = 3
EVAL_FREQ = 2
TASK_HORIZON = {0: 3, 1: 5}  # rank -> episode length of the task it evaluates


def _global_or_branch_decisions(presence_locals, any_locals, field_names, sync_across_ranks=True):
    """One SUM all-reduce over [presence | any]; OR of the any-flags, agreement check of the presence flags."""
    n = len(any_locals)
    if not sync_across_ranks or not dist.is_initialized():
        return tuple(bool(a) for a in any_locals)
    flag = torch.tensor([int(bool(p)) for p in presence_locals] + [int(bool(a)) for a in any_locals],
                        dtype=torch.int32)
    dist.all_reduce(flag, op=dist.ReduceOp.SUM)
    counts = flag.tolist()
    diverged = [(name, c) for name, c in zip(field_names, counts[:n]) if 0 < c < dist.get_world_size()]
    if diverged:
        raise RuntimeError(f"ranks disagree on field presence: {diverged}")
    return tuple(c > 0 for c in counts[n:])


class PI07LowLevelFlowMatching(nn.Module):
    def __init__(self, vocab=16, dim=8, action_dim=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.response_proj = nn.Linear(dim, dim)
        self.action_head = nn.Linear(dim + 3, action_dim)

    def embed_prefix(self, lang_tokens, state, response_tokens=None, response_mask=None, sync_across_ranks=True):
        prefix = self.embed_tokens(lang_tokens).mean(dim=1)
        has_response_local = response_mask is not None and bool(response_mask.any())
        (has_response,) = _global_or_branch_decisions(
            presence_locals=(response_tokens is not None,),
            any_locals=(has_response_local,),
            field_names=("response",),
            sync_across_ranks=sync_across_ranks,
        )
        if has_response and response_tokens is not None:
            resp = self.response_proj(self.embed_tokens(response_tokens).mean(dim=1))
            prefix = prefix + resp * response_mask.float().unsqueeze(-1)
        return torch.cat([prefix, state], dim=-1)

    def forward(self, batch):
        prefix = self.embed_prefix(batch["lang"], batch["state"], batch["response"], batch["response_mask"])
        return nn.functional.mse_loss(self.action_head(prefix), batch["action"])

    @torch.no_grad()
    def sample_actions(self, lang_tokens, state):
        # Independent per-rank rollout (sim eval): no cross-rank branch all-reduce.
        prefix = self.embed_prefix(lang_tokens, state, None, None, sync_across_ranks=False)
        return self.action_head(prefix)


class SimEnv:
    """A task whose episode ends after its horizon (success or timeout), as a vectorised sim env would report."""

    def __init__(self, horizon, seed):
        self.horizon = horizon
        self.g = torch.Generator().manual_seed(seed)

    def reset(self):
        self.t = 0
        return torch.randn(1, 3, generator=self.g)

    def step(self, action):
        self.t += 1
        return torch.randn(1, 3, generator=self.g), float(-action.abs().sum()), self.t >= self.horizon


def eval_policy_all(env, policy, n_episodes):
    lang = torch.tensor([[1, 2, 3]])
    total_reward, steps = 0.0, 0
    for _ in range(n_episodes):
        obs, done = env.reset(), False
        while not done:
            action = policy.sample_actions(lang, obs)
            obs, reward, done = env.step(action)
            total_reward += reward
            steps += 1
    return {"avg_sum_reward": total_reward / n_episodes, "n_steps": steps}


def make_batch(step, rank):
    g = torch.Generator().manual_seed(100 * step + rank)
    mask = torch.rand(4, generator=g) < 0.5
    return {"lang": torch.randint(0, 16, (4, 3), generator=g), "state": torch.randn(4, 3, generator=g),
            "response": torch.randint(0, 16, (4, 2), generator=g), "response_mask": mask,
            "action": torch.randn(4, 2, generator=g)}


def train():
    rank = dist.get_rank()
    torch.manual_seed(0)
    policy = DDP(PI07LowLevelFlowMatching())
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    env = SimEnv(TASK_HORIZON[rank], seed=rank)
    for step in range(1, STEPS + 1):
        loss = policy(make_batch(step, rank))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % EVAL_FREQ == 0:
            eval_info = eval_policy_all(env, policy.module, n_episodes=1)
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, [eval_info])  # gather_object across processes
            if rank == 0:
                print(f"[rank 0] eval at step {step}: {[info[0] for info in gathered]}")
    print(f"[rank {rank}] trained {STEPS} steps, last loss {loss.item():.4f}")


def worker():
    train()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
