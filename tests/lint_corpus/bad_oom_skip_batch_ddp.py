# A training loop that skips a batch when its forward/backward runs out of memory, with a DDP model:
# the exception comes from the rank's own batch, so only that rank takes the `continue`, and the other
# ranks' forward and backward of that step wait for it.
# Models the "| WARNING: ran out of memory, skipping batch" handler of facebookresearch/fairseq's early
# trainer (fairseq/trainer.py, train_step), written here.
# expect: 22 early-exit model() (DDP forward)
# expect: 23 early-exit loss.backward() (DDP backward)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(batches):
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches:
        try:
            x = x.to(dist.get_rank())
        except RuntimeError:
            print("| WARNING: ran out of memory, skipping batch")
            continue
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
