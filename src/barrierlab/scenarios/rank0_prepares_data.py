"""Rank 0 downloads the data set while the others wait at a barrier; then every rank reads it."""

import os
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main

ROWS = 1000


def download(path, chunks=4, seconds_per_chunk=0.2, fail_after=None):
    """A slow download that writes straight into its final file, chunk by chunk, as urllib.request.urlretrieve does."""
    time.sleep(seconds_per_chunk)  # connecting to the server
    with open(path, "w") as f:
        for chunk in range(chunks):
            if chunk == fail_after:
                raise ConnectionError(f"connection reset while downloading {os.path.basename(path)}")
            time.sleep(seconds_per_chunk)
            first, last = chunk * ROWS // chunks, (chunk + 1) * ROWS // chunks
            f.write("".join(f"{i},{i % 10}\n" for i in range(first, last)))
            f.flush()


def read_rows(path):
    with open(path) as f:
        return f.read().splitlines()


def scenario(folder=None, fail_after=None):
    folder = shared_folder(folder)
    path = os.path.join(folder, "train.csv")
    if dist.get_rank() == 0:
        with span("download", kind="io"):
            download(path, fail_after=fail_after)
    dist.barrier()  # the others wait here until rank 0 has finished writing
    with span("read", kind="io"):
        rows = read_rows(path)
    return len(rows)


if __name__ == "__main__":
    torchrun_main(scenario)
