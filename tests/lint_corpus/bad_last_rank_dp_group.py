# The same loss report under is_last_rank(), which holds on one rank of the last stage only:
# the other members of its data-parallel group never join the all_reduce. The helper looks its group up
# itself (group=get_data_parallel_group()), and the stage comes from a rank list's index. Modelled on
# megatron/core/parallel_state.py (initialize_model_parallel, is_pipeline_last_stage) and
# megatron/training/utils.py (average_losses_across_data_parallel_group), written here.
# expect: 51 hidden-collective average_losses_across_data_parallel_group -> dist.all_reduce
import torch
import torch.distributed as dist

_DATA_PARALLEL_GROUP = None
_PIPELINE_RANKS = None


def initialize_model_parallel(pipeline_size):
    global _DATA_PARALLEL_GROUP, _PIPELINE_RANKS
    rank, world = dist.get_rank(), dist.get_world_size()
    data_parallel_size = world // pipeline_size
    for stage in range(pipeline_size):
        ranks = list(range(stage * data_parallel_size, (stage + 1) * data_parallel_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            _DATA_PARALLEL_GROUP = group
    for first in range(data_parallel_size):
        ranks = list(range(first, world, data_parallel_size))
        dist.new_group(ranks)
        if rank in ranks:
            _PIPELINE_RANKS = ranks


def get_data_parallel_group():
    return _DATA_PARALLEL_GROUP


def is_last_rank():
    return dist.get_rank() == dist.get_world_size() - 1


def is_pipeline_last_stage():
    return _PIPELINE_RANKS.index(dist.get_rank()) == len(_PIPELINE_RANKS) - 1


def average_losses_across_data_parallel_group(losses):
    averaged = torch.cat([loss.detach().view(1) for loss in losses])
    dist.all_reduce(averaged, group=get_data_parallel_group())
    return averaged / dist.get_world_size(group=get_data_parallel_group())


def train(losses):
    initialize_model_parallel(2)
    if is_last_rank():
        return average_losses_across_data_parallel_group(losses)
    return None
