"""Rank 0 downloads and parses the data once, then broadcasts it: the broadcast is the only wait."""

import os

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main
from barrierlab.scenarios.rank0_prepares_data import download, read_rows


def scenario(folder=None):
    folder = shared_folder(folder)
    rank = dist.get_rank()
    header = [None]
    if rank == 0:
        path = os.path.join(folder, "train.csv")
        with span("download + parse", kind="io"):
            download(path)
            labels = torch.tensor([int(row.split(",")[1]) for row in read_rows(path)])
        header = [labels.shape]
    dist.broadcast_object_list(header, src=0)  # a small Python object, pickled; the others wait here
    if rank != 0:
        labels = torch.empty(header[0], dtype=torch.int64)
    dist.broadcast(labels, src=0)  # a big tensor: sent as raw bytes, no pickling
    return int(labels.sum())


if __name__ == "__main__":
    torchrun_main(scenario)
