"""A hand-written pickle all-gather whose size header is a ``uint8`` tensor, fine until a payload passes 255 bytes.

Models the ``all_gather_pickle`` / detectron2 ``comm.all_gather`` helpers (pickle to a byte tensor, all-gather
the sizes, pad every payload to the largest, all-gather, unpickle each up to its size; the sizes are
``torch.tensor([numel])`` / ``LongTensor``), and hard-example mining as in OHEM-style trainers: every epoch
each rank records the ids of its samples whose loss is above a threshold and the lists are gathered so
that every rank can oversample the same hard ids next epoch.

The learner casts the size tensor to the payload's dtype (``uint8``) "so that every all-gather of the helper
moves one dtype". The cumulative hard-id
list grows each epoch; rank 0's shard has noisy labels and more hard samples, rank 1's is clean.

BUG: the cast wraps the size at 256 without an error. In epoch 4 rank 0's pickled list first needs more than
255 bytes (316); its size arrives as 60, the maximum (rank 1's 148) is smaller than rank 0's own payload, and
rank 0 raises while padding (negative length) before the payload all-gather; rank 1 waits in that
all-gather. Epochs 0-3 (payloads up to 250 bytes) run normally.
"""
import pickle
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 5
SHARD = 48
THRESHOLD = 0.9


def all_gather_pickle(data):
    world_size = dist.get_world_size()
    buffer = pickle.dumps(data)
    tensor = torch.frombuffer(bytearray(buffer), dtype=torch.uint8)
    local_size = torch.tensor([tensor.numel()]).to(tensor.dtype)  # BUG
    size_list = [torch.zeros(1, dtype=torch.uint8) for _ in range(world_size)]
    dist.all_gather(size_list, local_size)
    sizes = [int(s.item()) for s in size_list]
    max_size = max(sizes)
    if tensor.numel() != max_size:
        tensor = torch.cat([tensor, torch.zeros(max_size - tensor.numel(), dtype=torch.uint8)])
    tensor_list = [torch.empty(max_size, dtype=torch.uint8) for _ in range(world_size)]
    dist.all_gather(tensor_list, tensor)  # WAITS
    return [pickle.loads(t.numpy().tobytes()[:n]) for t, n in zip(tensor_list, sizes)]


def shard(rank):
    g = torch.Generator().manual_seed(11 + rank)
    x = torch.randn(SHARD, 6, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    if rank == 0:
        flip = torch.rand(SHARD, generator=g) < 0.35
        y = torch.where(flip, 1 - y, y)
    ids = torch.arange(SHARD) + rank * SHARD
    return ids, x, y


def train(model, opt):
    rank = dist.get_rank()
    ids, x, y = shard(rank)
    hard = []
    weights = torch.ones(SHARD)
    for epoch in range(EPOCHS):
        losses = nn.functional.cross_entropy(model(x), y, reduction="none")
        loss = (losses * weights).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        hard.extend((epoch, i) for i in ids[losses.detach() > THRESHOLD].tolist())
        everyone = all_gather_pickle(hard)  # WAITS
        hard_ids = {i for lst in everyone for _, i in lst}
        weights = torch.tensor([2.0 if i in hard_ids else 1.0 for i in ids.tolist()])
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.3f}, hard ids so far {len(hard_ids)}, "
                  f"payloads {[len(pickle.dumps(lst)) for lst in everyone]} bytes")


def worker():
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 2))
    train(model, torch.optim.SGD(model.parameters(), lr=0.3))  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
