"""RLlib multi-agent PPO on several learners: each learner runs its policies' forward passes in the order its
batch happens to list them, so the per-module DDP all-reduces are issued in different orders.

Source: ray-project/ray issue #63819 ("[RLLib] NCCL rank desync timeout with num_learners=4 and MultiRLModule
containing 2 heterogeneous policies", 2026; the reproduction on CPU/gloo in the comment of 2026-07-15) and PR
#66030 (its "Known limitation" paragraph: each submodule of a MultiRLModule is wrapped in its own
TorchDDPRLModule, so every module has its own all-reduce). Modelled: TorchLearner's update over
`batch.policy_batches` (a dict per learner) and `MultiRLModule._forward_train`, which forwards the modules in
the order they appear in the batch; the losses are summed and one backward runs.

Every learner holds both policies and the same minibatch sizes, but learner 3 received its episodes so that
`policy_batches` lists `policy_b` before `policy_a` (the comment's trace: learners 0-2 `[policy_a, policy_b]`,
learner 3 `[policy_b, policy_a]`). Backward visits the later forward first, so learners 0-2 all-reduce
policy_b's gradient bucket first and learner 3 policy_a's: the buckets differ in size (crash on gloo, a
desync timeout on NCCL).

The bug: the forward loop follows the learner-local dict order.
"""

import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    for module_id, module_batch in policy_batches.items():  # BUG
        logits = modules[module_id](module_batch["obs"])
        logp = torch.log_softmax(logits, dim=-1).gather(1, module_batch["actions"][:, None]).squeeze(1)
        loss_per_module[module_id] = -(logp * module_batch["advantages"]).mean()
    total_loss = sum(loss_per_module.values())
    optimizer.zero_grad()
    total_loss.backward()  # WAITS
    optimizer.step()
    return {k: round(v.item(), 4) for k, v in loss_per_module.items()}


def worker():
    rank = dist.get_rank()
    modules = build_multi_rl_module()
    params = [p for m in modules.values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.01)
    for step in range(3):
        losses = update(modules, optimizer, sample_policy_batches(rank, step))  # WAITS
        if rank == 0:
            print(f"step {step}: {losses}", flush=True)
    checksum = torch.stack([p.detach().sum() for p in params]).sum()
    print(f"rank {rank}: learner update done, weight checksum {checksum.item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
