# The same groups, each used only by its members: every rank creates every stage's group (Megatron-LM's
# initialize_model_parallel: "all ranks have to participate in new_group"), keeps the one it belongs to, and
# calls the barrier on it; a group a rank is not in is never passed to a collective on that rank. Modelled on
# Megatron-LM megatron/core/parallel_state.py (the pipeline groups loop) and torch's new_group docs, written here.
# expect: none
import torch
import torch.distributed as dist

STAGES = 2


def stage_barrier():
    rank, world = dist.get_rank(), dist.get_world_size()
    per_stage = world // STAGES
    my_group = None
    for stage in range(STAGES):
        ranks = list(range(stage * per_stage, (stage + 1) * per_stage))
        group = dist.new_group(ranks)
        if rank in ranks:
            my_group = group
    dist.barrier(group=my_group)
    first_stage = dist.new_group(list(range(per_stage)))
    if rank < per_stage:
        dist.all_reduce(torch.ones(1), group=first_stage)
