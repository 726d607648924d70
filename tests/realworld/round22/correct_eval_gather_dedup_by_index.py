"""Round 22: validation predictions gathered with their indices and de-duplicated before rank 0 scores them.

Models: ``torch.utils.data.distributed.DistributedSampler`` (with ``drop_last=False`` it "will add extra indices to
make the data evenly divisible across the replicas"); torchvision's classification reference ``evaluate`` (its
warning "It looks like the dataset has N samples, but M samples were used for the validation"); accelerate
``gather_for_metrics`` (drops the duplicated samples of the last batch); sklearn-style metrics that call
``check_consistent_length`` ("Found input variables with inconsistent numbers of samples"); the common "gather with
``all_gather_object``, compute metrics ``if rank == 0``" evaluation loop.

What it does: three processes train a small DDP classifier for two epochs; after each epoch every rank predicts its
shard of a 10-sample validation set, the predictions are gathered with ``all_gather_object`` and rank 0 scores them
against the dataset's labels.

This is the correct twin: each prediction travels with its dataset index and rank 0 keeps one prediction per
index (the padding repeats indices 0 and 1), in dataset order, so 10 predictions meet 10 labels.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20
EPOCHS = 2


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(torch.arange(n), x, (x[:, 0] > 0).long())


def accuracy_score(y_true, y_pred):
    # sklearn.utils.check_consistent_length
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{len(y_true)}, {len(y_pred)}]"
        )
    return (y_true == y_pred).float().mean().item()


def train_one_epoch(model, opt, loader):
    model.train()
    for _, x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate(model, loader, val_set):
    model.eval()
    local = [(idx, pred) for idxs, x, _ in loader for idx, pred in zip(idxs.tolist(), model(x).argmax(1).tolist())]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, local)
    if dist.get_rank() != 0:
        return None
    # one prediction per dataset index: the sampler's padding repeats indices 0 and 1
    by_index = {idx: pred for shard in gathered for idx, pred in shard}
    preds = torch.tensor([by_index[i] for i in range(len(val_set))])
    labels = val_set.tensors[2]
    return accuracy_score(labels, preds)


def fit():
    train_set, val_set = make_split(48, 0), make_split(10, 1)
    train_sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    train_loader = DataLoader(train_set, batch_size=4, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=4, sampler=DistributedSampler(val_set, shuffle=False))
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(EPOCHS):
        train_sampler.set_epoch(epoch)
        train_one_epoch(model, opt, train_loader)
        acc = evaluate(model, val_loader, val_set)
        if acc is not None:
            print(f"epoch {epoch}: val accuracy {acc:.2f}", flush=True)


def worker():
    fit()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
