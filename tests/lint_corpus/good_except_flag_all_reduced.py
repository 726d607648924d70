# The same OOM recovery done together: the except block only records the failure, every rank all-reduces
# the flag after the try, and every rank retries with the smaller micro-batch when any rank ran out of
# memory. An ImportError handler (every rank has the same installation) may choose a collective.
# Models Composer's automatic micro-batching (mosaicml/composer composer/trainer/trainer.py, the OOM flag
# all-reduced with MAX after the forward on every rank), written here.
# expect: none
import torch
import torch.distributed as dist

try:
    from apex.parallel import DistributedDataParallel as DDP
except ImportError:
    from torch.nn.parallel import DistributedDataParallel as DDP


def step(model, optimizer, x, microbatch):
    while True:
        failed = False
        try:
            for start in range(0, len(x), microbatch):
                model(x[start : start + microbatch]).sum().backward()
        except torch.cuda.OutOfMemoryError:
            failed = True
        flag = torch.tensor([1.0 if failed else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() == 0.0:
            break
        optimizer.zero_grad()
        microbatch = max(1, microbatch // 2)
    dist.barrier()
    optimizer.step()
    return microbatch


def publish(write, rows):
    status = torch.zeros(1)
    try:
        write(rows)
    except OSError:
        status += 1
    finally:
        dist.all_reduce(status)
        if status.item() == 0:
            dist.barrier()
