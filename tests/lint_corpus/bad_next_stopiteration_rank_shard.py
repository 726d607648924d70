# The same `next()` loop over each rank's own slice of the files (`files[rank::world]`, no padding): the
# iterator ends after a different number of items on different ranks, so the `break` on `StopIteration` leaves
# the loop on one rank while another waits in the all_reduce. Modelled on the `while True: next(it)` loops of
# training scripts and webdataset-style per-rank shard lists, written here.
# expect: 19 early-exit dist.all_reduce
import torch
import torch.distributed as dist


def train(files):
    rank, world = dist.get_rank(), dist.get_world_size()
    it = iter(files[rank::world])
    while True:
        try:
            name = next(it)
        except StopIteration:
            break
        loss = torch.tensor([float(len(name))])
        dist.all_reduce(loss)
