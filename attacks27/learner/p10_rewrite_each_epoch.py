# Rank 0 writes this epoch's schedule to schedule.json, a barrier, then every rank reads it. Nothing keeps rank 0
# from rewriting it for the next epoch before a slow rank has read this epoch's.
import json
import time

import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = []
    for epoch in range(4):
        if rank == 0:
            with open("schedule.json", "w") as f:  # line 15
                json.dump({"epoch": epoch, "lr": 0.1 / (epoch + 1)}, f)
        dist.barrier()  # line 17
        if rank == 1:
            time.sleep(0.2)  # a slow rank (logging, a big batch)
        with open("schedule.json") as f:  # line 20
            seen.append(json.load(f)["epoch"])
    print("epochs read:", seen, flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
