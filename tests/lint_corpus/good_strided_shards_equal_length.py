# The list of shard files is a multiple of the world size long, so rank r's strided slice
# shards[r::world] has the same length on every rank and the loop runs as often everywhere.
# Models datasets' split_dataset_by_node when n_shards % world_size == 0 (huggingface/datasets
# src/datasets/distributed.py and iterable_dataset.py: the shards are spread evenly), written here.
# expect: none
import torch
import torch.distributed as dist


def count_tokens(shards_per_rank=3):
    rank, world = dist.get_rank(), dist.get_world_size()
    shards = [f"train-{i:05d}.bin" for i in range(world * shards_per_rank)]
    total = torch.zeros(1)
    for shard in shards[rank::world]:
        count = torch.tensor([float(len(shard))])
        dist.all_reduce(count)
        total += count
    return total
