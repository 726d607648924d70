# The same averaging with a missing gradient given zeros, so every rank reduces every parameter (the fix
# DeepSpeed and others apply to unused parameters), and a loop that only scales the gradients it has, with no
# collective inside. Written here.
# expect: none
import torch
import torch.distributed as dist


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
        param.grad.data /= size


def clip_local(model, scale):
    for param in model.parameters():
        if param.grad is None:
            continue
        param.grad.mul_(scale)
