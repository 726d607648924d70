# drop_last by hand: keep the largest multiple of the world size, give rank r every world-th index
# from r, then cut that into batches. Every rank gets total // world indices, so the same number of
# batches: the all_reduce per batch is reached equally often.
# Models torch.utils.data.DistributedSampler(drop_last=True) (pytorch/pytorch
# torch/utils/data/distributed.py: num_samples, total_size, indices[rank:total_size:num_replicas]) and
# notebook 03's uneven_data_fixed, written here.
# expect: none
import torch
import torch.distributed as dist


def epoch(dataset, batch_size):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    num_samples = len(dataset) // world_size
    total = num_samples * world_size
    indices = list(range(len(dataset)))
    mine = indices[rank:total:world_size]
    batches = [mine[i : i + batch_size] for i in range(0, len(mine), batch_size)]
    for batch in batches:
        loss = torch.tensor([float(sum(batch))])
        dist.all_reduce(loss)
