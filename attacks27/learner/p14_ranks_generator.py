# Even ranks form the "writer" group; the members are given as a generator expression.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    writers = dist.new_group(r for r in range(world) if r % 2 == 0)  # line 9
    if rank % 2 == 0:
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=writers)  # line 12
        print("writers sum", t.item(), "group size", dist.get_world_size(writers), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
