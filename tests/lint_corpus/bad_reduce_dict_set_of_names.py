# A loss dictionary all-reduced name by name, in the order of a set of its keys (the scalars to skip
# removed with a set difference): each torchrun worker has its own string hash seed, so the ranks reduce
# the losses in different orders and add one rank's box loss to another's mask loss. Models
# detectron2's utils/comm.py reduce_dict ("sort the keys so that they are consistent across processes"),
# written here the way it reads without its sorted().
# expect: 16 set-order dist.all_reduce
# expect: 23 set-order dist.all_reduce
import torch.distributed as dist


def reduce_loss_dict(loss_dict, skip=("num_samples",)):
    names = set(loss_dict) - set(skip)
    reduced = {}
    for name in names:
        value = loss_dict[name].detach().clone()
        dist.all_reduce(value)
        reduced[name] = value / dist.get_world_size()
    return reduced


def reduce_metrics(metrics):
    for name in {"precision", "recall", "f1"}:
        dist.all_reduce(metrics[name])
    return metrics
