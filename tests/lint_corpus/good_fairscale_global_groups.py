# Model-parallel and data-parallel groups kept in module globals that an init function sets (every rank
# creates every group, in the same order, and keeps its own); only model-parallel rank 0 reduces a statistic,
# over its data-parallel group, which holds exactly the ranks with model-parallel rank 0.
# Models fairscale's initialize_model_parallel and get_model_parallel_rank (facebookresearch/fairscale
# fairscale/nn/model_parallel/initialize.py: "global _MODEL_PARALLEL_GROUP"), written here.
# expect: none
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
        dist.all_reduce(loss, group=_DATA_PARALLEL_GROUP)
