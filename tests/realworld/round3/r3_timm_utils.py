"""Written after huggingface/pytorch-image-models timm/utils/distributed.py: reduce_tensor, distribute_bn."""

import torch
import torch.distributed as dist


def unwrap_model(model):
    return model.module if hasattr(model, "module") else model


def reduce_tensor(tensor: torch.Tensor, n: int) -> torch.Tensor:
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt / n


def distribute_bn(model, world_size: int, reduce: bool = False) -> None:
    for name, buf in unwrap_model(model).named_buffers(recurse=True):
        if "running_mean" in name or "running_var" in name:
            if reduce:
                dist.all_reduce(buf, op=dist.ReduceOp.SUM)
                buf /= float(world_size)
            else:
                dist.broadcast(buf, 0)
