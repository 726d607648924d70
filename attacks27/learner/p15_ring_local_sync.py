# Ring neighbours: each rank makes a group with its right neighbour, then one with its left neighbour, with
# use_local_synchronization=True so that only the two members take part in each.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    right = dist.new_group([rank, (rank + 1) % world], use_local_synchronization=True)  # line 10
    left = dist.new_group([(rank - 1) % world, rank], use_local_synchronization=True)  # line 11
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=right)
    dist.all_reduce(t, group=left)
    print(t.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
