# Wait for everyone, then set up the group.
import os

import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    if rank == 0:
        print("preparing data")
    dist.barrier()
    dist.init_process_group("gloo")
    print("rank", dist.get_rank(), "ready")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
