# The twin of bad_registered_on_rank0_only.py: the callback that all-reduces and the comm hook are registered on
# every rank; only a callback that makes no collective (printing) is rank 0's. Written here.
# expect: none
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


class ThroughputCallback:
    def on_step_end(self, tokens):
        total = torch.tensor([float(tokens)])
        dist.all_reduce(total)
        return total.item()


class PrintCallback:
    def on_step_end(self, tokens):
        print("step done", tokens)


def build(trainer):
    callbacks = [ThroughputCallback()]
    trainer.add_callback(ThroughputCallback())
    if dist.get_rank() == 0:
        callbacks.append(PrintCallback())
        trainer.add_callback(PrintCallback())
    return callbacks


def wrap(module, compress):
    model = DDP(module)
    if dist.get_rank() == 0:
        print("gradient compression:", compress)
    model.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    return model
