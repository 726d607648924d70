# The same reductions in one order on every rank: the names sorted (detectron2's utils/comm.py reduce_dict
# sorts the keys "so that they are consistent across processes"), and a set of ints, which iterates alike in
# every process. Written here.
# expect: none
import torch.distributed as dist


def reduce_loss_dict(loss_dict, skip=("num_samples",)):
    names = sorted(set(loss_dict) - set(skip))
    reduced = {}
    for name in names:
        value = loss_dict[name].detach().clone()
        dist.all_reduce(value)
        reduced[name] = value / dist.get_world_size()
    return reduced


def reduce_layers(grads):
    for layer in set(range(len(grads))):
        dist.all_reduce(grads[layer])
    return grads
