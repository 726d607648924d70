# A subclass calls a method it inherits from a base class of the same file; the method ends in a barrier.
# expect: 18 hidden-collective self.sync -> dist.barrier
import torch.distributed as dist


class BaseTrainer:
    def sync(self):
        dist.barrier()


class Trainer(BaseTrainer):
    def __init__(self):
        self.rank = dist.get_rank()

    def end_epoch(self):
        if self.rank == 0:
            print("saving")
            self.sync()
