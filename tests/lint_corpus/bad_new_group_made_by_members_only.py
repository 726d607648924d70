# A pair of ranks that makes its own group under the condition that picks them, and uses it there: on gloo
# nothing waits at that new_group, but the ranks that skipped it number their later groups differently, and the
# next group every rank makes waits until the timeout (review58b's case, run here on 3 ranks: stopped at the
# deadline). The barrier on the pair's group is no second finding: only the new_group is. Written here.
# expect: 12 branch dist.new_group
import torch.distributed as dist


def pair_then_world():
    rank = dist.get_rank()
    if rank in (0, 1):
        pair = dist.new_group([0, 1])
        dist.barrier(group=pair)
    world = dist.new_group(list(range(dist.get_world_size())))
    dist.barrier(group=world)
