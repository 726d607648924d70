# From runebook.dev "Mastering torch.distributed.barrier()": the barrier only rank 0 reaches.
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        print(f"Rank {rank}: Performing setup task.")
        dist.barrier()
    else:
        print(f"Rank {rank}: Skipping setup.")
    print(f"Rank {rank}: All processes should be here now, but we are hanging...")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
