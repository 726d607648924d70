# Out-of-memory recovery whose handler synchronises: the rank whose forward ran out of memory calls a
# barrier (and then the retried step's DDP backward) from the except block, while the other ranks are
# already in the gradient all_reduce of their own backward. A `finally` that waits only when this rank's
# step succeeded has the same shape: the flag comes from this rank's except block.
# Models the OOM-recovery path of fairseq's Trainer.train_step (facebookresearch/fairseq fairseq/trainer.py,
# "attempting to recover from OOM in forward/backward pass") and the publish-then-barrier `finally` of
# torchtitan's train loop (pytorch/torchtitan train.py), written here.
# expect: 24 except-path dist.barrier
# expect: 25 except-path model() (DDP forward)
# expect: 25 except-path model(x[: len(x) // 2]).sum().backward() (DDP backward)
# expect: 38 branch dist.barrier
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, optimizer, batches):
    model = DDP(model)
    for x in batches:
        try:
            model(x).sum().backward()
        except torch.cuda.OutOfMemoryError:
            optimizer.zero_grad()
            dist.barrier()
            model(x[: len(x) // 2]).sum().backward()
        optimizer.step()


def publish(write, rows):
    succeeded = False
    try:
        write(rows)
        succeeded = True
    except OSError:
        succeeded = False
    finally:
        if succeeded:
            dist.barrier()
