# A length-bucketing batch sampler that deals the batches round-robin to the ranks (`batches[rank::replicas]`)
# and drops the remainder only when asked (`drop_last`, off by default): with 5 batches on 2 ranks, rank 0 runs a
# third DDP step that rank 1 never joins. Modelled on jaywalnut310/vits data_utils.py `DistributedBucketSampler`
# with its padding step left out (and a `drop_last` flag in its place), written here.
# expect: 33 rank-dependent-loop model() (DDP forward)
# expect: 33 rank-dependent-loop model(data[batch]).sum().backward() (DDP backward)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class BucketBatchSampler:
    def __init__(self, lengths, batch_size, num_replicas, rank, drop_last=False):
        self.lengths, self.batch_size = lengths, batch_size
        self.num_replicas, self.rank, self.drop_last = num_replicas, rank, drop_last

    def _batches(self):
        order = sorted(range(len(self.lengths)), key=lambda i: self.lengths[i])
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.drop_last:
            batches = batches[: len(batches) - len(batches) % self.num_replicas]
        return batches

    def __iter__(self):
        return iter(self._batches()[self.rank :: self.num_replicas])


def main(data, lengths):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    sampler = BucketBatchSampler(lengths, 2, world, rank)
    for batch in sampler:
        model(data[batch]).sum().backward()
