# Every rank streams its own split of the data (lengths differ), loops forever over it followed by an
# end marker, and leaves only when an all_reduce says every rank has run out: every rank makes the same
# all_reduce calls and breaks at the same one.
# Models the recipe lhoestq posted in huggingface/datasets issue #6623 ("streaming datasets doesn't work
# properly with multi-node"), written here.
# expect: none
import itertools

import torch
import torch.distributed as dist


def train(stream, model):
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = stream.shard(num_shards=world, index=rank)
    out_of_data = torch.zeros(world)
    for sample in itertools.cycle(itertools.chain(mine, [None])):
        if sample is None:
            out_of_data[rank] = 1
            continue
        dist.all_reduce(out_of_data)
        if out_of_data.min() > 0:
            break
        loss = model(sample).sum()
        dist.all_reduce(loss)
