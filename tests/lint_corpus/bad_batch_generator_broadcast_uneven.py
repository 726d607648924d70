# A batch generator that broadcasts each batch in the model-parallel group (Megatron-LM's `get_batch` hands the
# batch of the group's first rank to the others with `tensor_parallel.broadcast_data`), iterated for as many
# steps as this rank's own shard has batches: the shards differ in length, so the generator's broadcasts run a
# different number of times on different ranks. Written here.
# expect: 23 hidden-collective batches -> dist.broadcast
import torch
import torch.distributed as dist


def batches(samples, steps):
    for step in range(steps):
        data = torch.zeros(4)
        if dist.get_rank() == 0:
            data = torch.tensor(samples[step % len(samples)], dtype=torch.float32)
        dist.broadcast(data, src=0)
        yield data


def train(shards):
    rank = dist.get_rank()
    mine = shards[rank]
    steps = len(mine) // 4
    for x in batches(mine, steps):
        print(x.sum())
