"""Rank 0 downloads the data set and nobody waits for it: the others read a missing or half-written file."""

import os
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main
from barrierlab.scenarios.rank0_prepares_data import download, read_rows


def scenario(folder=None, setup_seconds=(0.0, 0.0, 0.5, 1.3)):
    folder = shared_folder(folder)
    path = os.path.join(folder, "train.csv")
    rank = dist.get_rank()
    if rank == 0:
        with span("download", kind="io"):
            download(path)
    else:
        with span("other setup"):
            time.sleep(setup_seconds[rank % len(setup_seconds)])  # building the model, etc.
    # BUG: nothing makes ranks 1..N-1 wait until rank 0 has finished the download
    with span("read", kind="io"):
        rows = read_rows(path)
    return len(rows)


if __name__ == "__main__":
    torchrun_main(scenario)
