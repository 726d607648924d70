"""Loops whose trip count differs by rank: 10 samples on 4 ranks make 2 batches on some ranks and 1 on others."""

import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(num_samples=10, batch_size=2):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    my_samples = list(range(num_samples))[rank::world_size]  # 3, 3, 2, 2 samples
    batches = [my_samples[i:i + batch_size] for i in range(0, len(my_samples), batch_size)]
    total = torch.zeros(1)
    for batch in batches:  # 2, 2, 1, 1 iterations
        with span("step"):
            time.sleep(0.05)
            loss = torch.tensor([float(sum(batch))])
        dist.all_reduce(loss)  # every step averages the loss, as DDP averages gradients
        total += loss
    return len(batches)


if __name__ == "__main__":
    torchrun_main(scenario)
