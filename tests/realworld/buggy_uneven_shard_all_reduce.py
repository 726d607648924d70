"""Hand-made sharding ``samples[rank::world_size]`` gives ranks different numbers of batches; the per-step
all_reduce of the loss then runs more often on one rank.

Source: deepspeedai/DeepSpeedExamples PR #117 thread (bing_bert: "not all processes can reach
save_checkpoint()" because the ranks' data files held different numbers of samples, found by printing at
deepspeed_train.py#L220) and SeungjunNah/DeepDeblur-PyTorch issue #44 (an evaluation sampler without
padding hangs when the dataset size is not divisible by the number of processes).
Bug: the shard sizes differ (BUG: 5 samples over 2 ranks); the rank with more batches waits in the
all_reduce of its extra step (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    samples = list(range(5))
    shard = samples[rank::world_size]  # BUG
    model = torch.nn.Linear(1, 1)
    running = 0.0
    for sample in shard:
        loss = model(torch.tensor([[float(sample)]])).pow(2).mean().detach()
        dist.all_reduce(loss)  # WAITS
        running += loss.item() / world_size
    return running


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
