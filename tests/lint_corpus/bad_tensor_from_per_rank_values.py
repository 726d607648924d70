# Values whose dtype or shape comes from each rank's data, handed to collectives: a meter that sums
# `val * n` (a Python float on one rank, a numpy float64 or an int on another) all-reduced as
# torch.tensor([...]) without dtype=, and a count of tokens taken by gathering the padded input_ids
# (each rank's batch is padded to its own longest sequence).
# Models AverageMeter.all_reduce of pytorch/examples imagenet/main.py (which pins dtype=torch.float32) and
# the tokens-seen count of transformers' Trainer before PR #29099 (huggingface/transformers), written here.
# expect: 25 dtype-mismatch dist.all_reduce
# expect: 33 size-mismatch accelerator.gather
import torch
import torch.distributed as dist
from accelerate import Accelerator


class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    def all_reduce(self):
        total = torch.tensor([self.sum, self.count])
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()


def count_tokens(loader):
    accelerator = Accelerator()
    seen = 0
    for batch in loader:
        seen += accelerator.gather(batch["input_ids"]).numel()
    return seen
