"""RLlib multi-agent PPO with several Learners: a Learner whose shard has no samples of one policy never enters that
policy's DDP all-reduce.

Source: ray-project/ray issue #63819 ("NCCL rank desync timeout with num_learners=4 and MultiRLModule containing 2
heterogeneous policies"), root cause and CPU/gloo repro in the thread; modelled on
``rllib/core/learner/torch/torch_learner.py`` (``_make_modules_ddp_if_necessary``, ``compute_gradients``) and
``MultiRLModule._forward_train`` (``for mid in batch.keys() if mid in self``).

With ``num_learners > 1`` every sub-module of a ``MultiRLModule`` is wrapped in its own ``TorchDDPRLModule``. A
Learner only runs ``forward_train`` and builds losses for the module ids present in *its* shard, then calls
``sum(loss_per_module.values()).backward()``. When the episode sharder hands one Learner no samples of the minority
policy, that Learner never arms and never reduces that policy's DDP buckets, while the Learners that did see it block
in the policy's gradient all-reduce (the NCCL watchdog timeout of the report; a gloo timeout on CPU).

Here three Learners train policies ``main`` and ``minority``; Learner 2's shard has no ``minority`` rows.

BUG: the forward/loss loop walks only the module ids of the local batch.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15

MODULE_IDS = ("main", "minority")


def make_modules():
    torch.manual_seed(0)
    modules = {"main": torch.nn.Linear(4, 3), "minority": torch.nn.Linear(4, 5)}
    # _make_modules_ddp_if_necessary: one DDP wrapper per sub-module, all on the default group.
    return {mid: DDP(m) for mid, m in modules.items()}


def shard_for(rank, step):
    """ShardEpisodesIterator: the minority policy's few episodes land on Learners 0 and 1 only."""
    g = torch.Generator().manual_seed(100 * step + rank)
    batch = {"main": torch.randn(6, 4, generator=g)}
    if rank != 2:
        batch["minority"] = torch.randn(2, 4, generator=g)
    return batch


def compute_losses(modules, batch):
    losses = {}
    for mid in batch:  # BUG
        if mid in modules:
            out = modules[mid](batch[mid])
            losses[mid] = out.pow(2).mean()
    return losses


def compute_gradients(modules, batch):
    losses = compute_losses(modules, batch)
    total_loss = sum(losses.values())
    total_loss.backward()  # WAITS
    return {mid: loss.item() for mid, loss in losses.items()}


def update(modules, optimizer, batch):
    optimizer.zero_grad()
    stats = compute_gradients(modules, batch)  # WAITS
    optimizer.step()
    return stats


def worker():
    rank = dist.get_rank()
    modules = make_modules()
    params = [p for m in modules.values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    for step in range(3):
        stats = update(modules, optimizer, shard_for(rank, step))  # WAITS
        print(f"[learner {rank}] step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(stats.items())),
              flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
