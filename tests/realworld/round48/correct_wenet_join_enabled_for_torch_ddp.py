"""WeNet (wenet-e2e/wenet issue #2266, 2023-12; `wenet/utils/train_utils.py` `wenet_join`, `Executor.train`):
with shard-based (IterableDataset) data the ranks end an epoch at different batches ("rank 1 has at least 1000
fewer inputs than other currently-active ranks"). `wenet_join` -- a `monitored_barrier` on a separate gloo group
with a short timeout before every step, which makes all ranks leave the epoch together when one has run out -- was
switched on only for DeepSpeed; for `torch_ddp` it returned False at once ("可以参考train_utils.py::wenet_join函数，
目前是只对deepspeed打开了，ddp没开，可以把他打开").

Here: 2 ranks, a tiny DDP model, rank 0's shard list yields 3 batches and rank 1's 5; after the epoch both run the
CV pass, whose loss is all-reduced.

Fix (the maintainer's answer: switch `wenet_join` on for DDP too): rank 1's monitored barrier before its 4th step
times out after 3 s because rank 0 has left the epoch; rank 1 breaks too, and both meet in the CV all-reduce (the
default group's 15 s timeout covers the 3 s join timeout).
"""
import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15
JOIN_TIMEOUT = 3
TRAIN_ENGINE = "torch_ddp"


def wenet_join(group_join, info_dict):
    if info_dict["batch_idx"] == 0:
        return False
    try:
        dist.monitored_barrier(group=group_join, timeout=datetime.timedelta(seconds=JOIN_TIMEOUT))
    except RuntimeError as e:
        print(f"rank {dist.get_rank()}: Detected uneven workload distribution: {str(e).splitlines()[0]}", flush=True)
        return True
    return False


def shard_batches(rank):
    g = torch.Generator().manual_seed(10 + rank)
    n = 3 if rank == 0 else 5  # the utterances in this rank's shards make fewer batches
    return [(torch.randn(4, 6, generator=g), torch.randn(4, 2, generator=g)) for _ in range(n)]


def train_epoch(model, opt, batches, group_join):
    for batch_idx, (x, y) in enumerate(batches):
        if wenet_join(group_join, {"batch_idx": batch_idx, "train_engine": TRAIN_ENGINE}):
            break
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return batch_idx


def cv(model):
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(8, 6, generator=g), torch.randn(8, 2, generator=g)
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model.module(x), y).reshape(1)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


def worker():
    rank = dist.get_rank()
    group_join = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=JOIN_TIMEOUT))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    last = train_epoch(model, opt, shard_batches(rank), group_join)
    cv_loss = cv(model)
    print(f"rank {rank}: epoch ended at batch {last}, cv loss {cv_loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
