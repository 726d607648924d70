# Something that makes collectives later, registered on rank 0 only. A throughput callback whose step hook
# all-reduces the token count is added to the trainer's callbacks under a rank test ("loggers live on the main
# process"), as transformers' `Trainer.add_callback` and Lightning's callback lists take them; and DDP's fp16
# gradient compression hook (PyTorch's DDP communication hooks docs: `register_comm_hook(state=None,
# hook=default_hooks.fp16_compress_hook)`) registered only where the rank prints its choice. Written here.
# expect: 38 hidden-collective callbacks.append(ThroughputCallback(...)) -> dist.all_reduce
# expect: 39 hidden-collective trainer.add_callback(ThroughputCallback(...)) -> dist.all_reduce
# expect: 47 branch model.register_comm_hook(fp16_compress_hook)
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


class ThroughputCallback:
    def __init__(self):
        self.tokens = 0

    def on_step_end(self, tokens):
        total = torch.tensor([float(tokens)])
        dist.all_reduce(total)
        return total.item()


class PrintCallback:
    def on_step_end(self, tokens):
        print("step done", tokens)


class Trainer:
    def add_callback(self, callback):
        self.callbacks.append(callback)


def build(trainer):
    callbacks = [PrintCallback()]
    if dist.get_rank() == 0:
        callbacks.append(ThroughputCallback())
        trainer.add_callback(ThroughputCallback())
    return callbacks


def wrap(module, compress):
    model = DDP(module)
    if dist.get_rank() == 0:
        print("gradient compression:", compress)
        model.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    return model
