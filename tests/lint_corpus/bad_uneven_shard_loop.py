# A hand-made sampler gives rank r the indices r, r + world, ...; with 10 samples
# and 4 ranks, ranks 0-1 get 3 batches and ranks 2-3 get 2: the last all_reduce hangs.
# expect: 29 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Sampler


class StridedSampler(Sampler):
    def __init__(self, dataset, rank, world_size):
        self.indices = list(range(rank, len(dataset), world_size))

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


def train_epoch(model, optimizer, dataset):
    rank = dist.get_rank()
    sampler = StridedSampler(dataset, rank=rank, world_size=dist.get_world_size())
    loader = DataLoader(dataset, batch_size=1, sampler=sampler)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
