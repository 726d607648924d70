# Rank 0 prepares the vocabulary, the others read it: no barrier in between.
import os
import time

import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        time.sleep(0.3)  # "downloading"
        with open("vocab_p03.txt", "w") as f:
            f.write("a\nb\nc\n")
    with open("vocab_p03.txt") as f:
        vocab = f.read().split()
    print(rank, len(vocab))
    dist.barrier()
    if rank == 0:
        os.remove("vocab_p03.txt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
