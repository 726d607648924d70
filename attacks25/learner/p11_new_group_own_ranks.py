# pytorch/pytorch#130102: each rank builds only the subgroup it belongs to, then barriers on it.
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    grp_ranks = [0, 3] if rank in (0, 3) else [1, 2]
    grp = dist.new_group(ranks=grp_ranks)
    print(rank, "before barrier:", dist.get_process_group_ranks(grp))
    dist.barrier(group=grp)
    print(rank, "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
