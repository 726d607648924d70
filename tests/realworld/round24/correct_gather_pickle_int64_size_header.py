"""A hand-written pickle all-gather whose size header is an ``int64`` tensor, as the public helpers have it.

Models the ``all_gather_pickle`` / detectron2 ``comm.all_gather`` helpers (pickle to a byte tensor, all-gather
the sizes as ``torch.tensor([numel])`` / ``LongTensor``, pad every payload to the largest, all-gather,
unpickle each up to its size), and hard-example mining as in OHEM-style trainers: every epoch each rank
records the ids of its samples whose loss is above a threshold and the lists are gathered so that every
rank can oversample the same hard ids next epoch.

The cumulative hard-id list grows each epoch (rank 0's shard has noisy labels; its payload reaches 316
bytes in epoch 4, rank 1's stays at 148). Correct: the sizes travel as ``int64``, so every rank pads to the
true maximum and the payload all-gather pairs up in every epoch.
"""
import pickle
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 5
SHARD = 48
THRESHOLD = 0.9


def all_gather_pickle(data):
    world_size = dist.get_world_size()
    buffer = pickle.dumps(data)
    tensor = torch.frombuffer(bytearray(buffer), dtype=torch.uint8)
    local_size = torch.tensor([tensor.numel()], dtype=torch.long)
    size_list = [torch.zeros(1, dtype=torch.long) for _ in range(world_size)]
    dist.all_gather(size_list, local_size)
    sizes = [int(s.item()) for s in size_list]
    max_size = max(sizes)
    if tensor.numel() != max_size:
        tensor = torch.cat([tensor, torch.zeros(max_size - tensor.numel(), dtype=torch.uint8)])
    tensor_list = [torch.empty(max_size, dtype=torch.uint8) for _ in range(world_size)]
    dist.all_gather(tensor_list, tensor)
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
        everyone = all_gather_pickle(hard)
        hard_ids = {i for lst in everyone for _, i in lst}
        weights = torch.tensor([2.0 if i in hard_ids else 1.0 for i in ids.tolist()])
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.3f}, hard ids so far {len(hard_ids)}, "
                  f"payloads {[len(pickle.dumps(lst)) for lst in everyone]} bytes")


def worker():
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 2))
    train(model, torch.optim.SGD(model.parameters(), lr=0.3))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
