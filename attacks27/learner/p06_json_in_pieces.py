# Rank 0 builds the label map and streams it to labels.json one entry at a time; the other ranks wait until the
# file exists (a common "poll for the cache file" idiom), then load it.
import json
import os
import time

import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    path = "labels.json"
    if rank == 0:
        with open(path, "w") as f:  # line 15
            f.write("{")
            for i in range(20):
                f.write(f'"label{i}": {i}, ')
                f.flush()
                time.sleep(0.02)
            f.write('"end": -1}')
    else:
        while not os.path.exists(path):  # line 23
            time.sleep(0.01)
        with open(path) as f:  # line 25
            labels = json.load(f)
        print(len(labels))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
