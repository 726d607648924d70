# Rank dependence hides behind two assignments.
# expect: 14 branch dist.barrier
# expect: 17 branch dist.all_gather_object
import torch.distributed as dist


def log_and_sync(stats):
    r = dist.get_rank()
    leader = r == 0
    should_write = leader and stats["step"] % 100 == 0
    if should_write:
        with open("log.txt", "a") as f:
            f.write(f"{stats}\n")
        dist.barrier()
    if leader:
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, stats)
        return gathered
    return None
