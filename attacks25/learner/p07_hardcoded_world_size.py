# Copied from a 4-GPU machine: world_size hard-coded.
import os

import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=4)
    dist.barrier()
    print("rank", rank, "passed the barrier")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
