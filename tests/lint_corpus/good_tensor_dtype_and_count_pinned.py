# The same meter with its dtype pinned, and the token count gathered as a one-element int64 tensor (the
# same shape on every rank); input_ids padded to one width across processes before a gather is fine too.
# Models pytorch/examples imagenet/main.py AverageMeter.all_reduce and transformers PR #29099
# (huggingface/transformers), written here.
# expect: none
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
        total = torch.tensor([self.sum, self.count], dtype=torch.float32)
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()


def count_tokens(loader):
    accelerator = Accelerator()
    seen = 0
    for batch in loader:
        count = torch.tensor([batch["input_ids"].numel()], dtype=torch.int64)
        seen += int(accelerator.gather(count).sum())
        padded = accelerator.pad_across_processes(batch["input_ids"], dim=1)
        accelerator.gather(padded)
    return seen
