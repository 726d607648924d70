# A trainer method decorated with a helper module's master_only (after NVlabs/imaginaire
# imaginaire/utils/distributed.py, whose trainers decorate their writers with it): the name says nothing of
# ranks, but the decorator, in corpus_imaginaire_dist.py, calls the method on rank 0 only. Averaging the
# meters there leaves rank 0 alone in the all_reduce.
# expect: 21 branch dist.all_reduce
import torch
import torch.distributed as dist

from corpus_imaginaire_dist import master_only, timed


class Trainer:
    def __init__(self, writer):
        self.writer = writer
        self.meters = {"loss": torch.zeros(1)}

    @timed
    @master_only
    def write_metrics(self, iteration):
        for name, meter in self.meters.items():
            dist.all_reduce(meter)
            self.writer.add_scalar(name, meter.item() / dist.get_world_size(), iteration)
