# A property whose getter all-reduces, read first on rank 0 only (a log line): reading it runs the getter, so
# rank 0's all_reduce meets whatever collective the other ranks make next. The lazily computed step count of a
# data module (fairseq2's _reduce_num_batches: the minimum number of batches over the ranks), written here as
# a property.
# expect: 24 hidden-collective data.steps -> dist.all_reduce
import torch
import torch.distributed as dist


class Shards:
    def __init__(self, rank):
        self.batches = [torch.zeros(4)] * (5 - rank)

    @property
    def steps(self):
        n = torch.tensor([len(self.batches)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN)
        return int(n.item())


def train(rank, model):
    data = Shards(rank)
    if rank == 0:
        print(f"{data.steps} steps")
    for _, batch in zip(range(data.steps), data.batches):
        dist.all_reduce(model(batch))
