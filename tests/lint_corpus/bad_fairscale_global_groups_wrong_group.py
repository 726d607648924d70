# The same global groups, but model-parallel rank 0 reduces over its model-parallel group: that group also
# holds model-parallel rank 1, which never makes the call.
# Models fairscale's initialize_model_parallel and get_model_parallel_rank (facebookresearch/fairscale
# fairscale/nn/model_parallel/initialize.py: "global _MODEL_PARALLEL_GROUP"), written here.
# expect: 34 branch dist.all_reduce
import torch.distributed as dist

_MODEL_PARALLEL_GROUP = None
_DATA_PARALLEL_GROUP = None


def initialize_model_parallel(model_parallel_size):
    global _MODEL_PARALLEL_GROUP, _DATA_PARALLEL_GROUP
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for i in range(model_parallel_size):
        ranks = range(i, world_size, model_parallel_size)
        group = dist.new_group(ranks)
        if rank in ranks:
            _DATA_PARALLEL_GROUP = group
    for i in range(world_size // model_parallel_size):
        ranks = range(i * model_parallel_size, (i + 1) * model_parallel_size)
        group = dist.new_group(ranks)
        if rank in ranks:
            _MODEL_PARALLEL_GROUP = group


def get_model_parallel_rank():
    return dist.get_rank(group=_MODEL_PARALLEL_GROUP)


def log_loss(loss):
    initialize_model_parallel(2)
    if get_model_parallel_rank() == 0:
        dist.all_reduce(loss, group=_MODEL_PARALLEL_GROUP)
