# The stop flag is all-reduced, but the loop is over this rank's own split, whose length differs: the
# rank with the fewest samples leaves the for loop on its own, and the others wait in the all_reduce.
# The version of huggingface/datasets issue #6623 before its fix (no cycle, no end marker), written here.
# expect: 14 rank-dependent-loop dist.all_reduce
# expect: 17 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist


def train(stream, model):
    rank, world = dist.get_rank(), dist.get_world_size()
    done = torch.zeros(1)
    for sample in stream.shard(num_shards=world, index=rank):
        dist.all_reduce(done)
        if done.item() > 0:
            break
        dist.all_reduce(model(sample).sum())
