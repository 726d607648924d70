"""RLlib multi-agent PPO on several learners, fixed: every learner runs its policies' forward passes in one
canonical (sorted) module order, so the per-module DDP all-reduces line up.

Source: ray-project/ray issue #63819 (2026; the comment of 2026-07-15 traces the crash to learner 3 listing
`policy_b` before `policy_a`) and PR #66030. The issue was open when read; the fix here is the one the trace
points to: iterate the module batches in an order every learner shares (sorted module ids) instead of the
batch's arrival order. Modelled: TorchLearner's update and MultiRLModule._forward_train, one DDP wrapper per
submodule, summed losses, one backward. Learner 3 still receives `[policy_b, policy_a]`.
"""

import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

MODULE_SPECS = {"policy_a": (8, 4), "policy_b": (6, 2)}  # two heterogeneous policies (obs dim, actions)


def build_multi_rl_module():
    torch.manual_seed(0)
    modules = {}
    for module_id, (obs_dim, num_actions) in MODULE_SPECS.items():
        net = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, num_actions))
        modules[module_id] = DDP(net)  # TorchDDPRLModule: one DDP wrapper (one reducer) per submodule
    return modules


def sample_policy_batches(rank, step):
    """The env runners' episodes as this learner received them: same sizes everywhere, order by arrival."""
    order = ["policy_b", "policy_a"] if rank == 3 else ["policy_a", "policy_b"]
    gen = torch.Generator().manual_seed(100 * step + rank)
    batches = {}
    for module_id in order:
        obs_dim, num_actions = MODULE_SPECS[module_id]
        batches[module_id] = {
            "obs": torch.randn(16, obs_dim, generator=gen),
            "actions": torch.randint(0, num_actions, (16,), generator=gen),
            "advantages": torch.randn(16, generator=gen),
        }
    return batches


def update(modules, optimizer, policy_batches):
    loss_per_module = {}
    for module_id in sorted(policy_batches):  # one order on every learner
        module_batch = policy_batches[module_id]
        logits = modules[module_id](module_batch["obs"])
        logp = torch.log_softmax(logits, dim=-1).gather(1, module_batch["actions"][:, None]).squeeze(1)
        loss_per_module[module_id] = -(logp * module_batch["advantages"]).mean()
    total_loss = sum(loss_per_module.values())
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
    return {k: round(v.item(), 4) for k, v in loss_per_module.items()}


def worker():
    rank = dist.get_rank()
    modules = build_multi_rl_module()
    params = [p for m in modules.values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.01)
    for step in range(3):
        losses = update(modules, optimizer, sample_policy_batches(rank, step))
        if rank == 0:
            print(f"step {step}: {losses}", flush=True)
    checksum = torch.stack([p.detach().sum() for p in params]).sum()
    print(f"rank {rank}: learner update done, weight checksum {checksum.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
