"""``AverageMeter`` values all-reduced explicitly in ``validate`` on every rank; ``__del__`` only warns.

Models: pytorch/examples ``imagenet/main.py`` (``AverageMeter.all_reduce()``, called for ``top1`` / ``top5`` in
``validate()`` on every rank when distributed; ``ProgressMeter.display_summary()``). The meter class keeps a
finalizer, but it makes no collective: it warns if a meter was never synced.

What it does: DDP training of a small classifier for 3 epochs; after each epoch ``validate`` fills ``losses`` and
``top1`` meters over 2 batches and all-reduces both on every rank; rank 0 appends ``top1`` to ``history`` for the
end-of-run accuracy table. The meters die at different moments on different ranks (rank 0 keeps ``top1`` alive),
which is harmless because nothing collective happens when they die.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class AverageMeter:
    def __init__(self, name):
        self.name, self.sum, self.count, self.synced = name, 0.0, 0, False

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)

    def all_reduce(self):
        total = torch.tensor([self.sum, self.count], dtype=torch.float64)
        dist.all_reduce(total)
        self.sum, self.count = total[0].item(), int(total[1].item())
        self.synced = True


class SyncedMeter(AverageMeter):
    def __del__(self):
        if not self.synced:
            print(f"warning: meter {self.name} was never all-reduced")


def validate(model, batches, history):
    losses, top1 = SyncedMeter("Loss"), SyncedMeter("Acc@1")
    model.eval()
    with torch.no_grad():
        for x, y in batches:
            out = model.module(x)
            losses.update(torch.nn.functional.cross_entropy(out, y).item(), len(y))
            top1.update((out.argmax(1) == y).float().mean().item() * 100, len(y))
    losses.all_reduce()
    top1.all_reduce()
    if dist.get_rank() == 0:
        history.append(top1)
    return losses.avg


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(7 + rank)
    train = [(torch.randn(8, 10, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(3)]
    val = [(torch.randn(8, 10, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(2)]
    history = []
    for epoch in range(3):
        model.train()
        for x, y in train:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        val_loss = validate(model, val, history)
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss:.4f}")
    if rank == 0:
        print("accuracy by epoch:", [round(m.avg, 1) for m in history])
    dist.barrier()  # leave together: no rank tears its group down while a peer still talks to it


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
