# Each rank makes only its own pair's group, as torch allows with use_local_synchronization=True, in the order
# it lists them (rank 1 lists [1, 0]); the ranks then all-reduce within the pair. At the end, rank 3 leaves early
# (its shard ran out) and never reaches the final barrier.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    pair = [rank, rank ^ 1]
    mine = dist.new_group(pair, use_local_synchronization=True)
    for _ in range(3):
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=mine)
    if rank == 3:
        return  # shard ran out
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
