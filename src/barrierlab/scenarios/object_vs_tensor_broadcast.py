"""broadcast_object_list on rank 0 against a plain broadcast on the others: they pair silently, wrong value."""

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(epochs=3):
    rank = dist.get_rank()
    if rank == 0:
        box = [epochs]  # rank 0 read the number of epochs from its config file
        dist.broadcast_object_list(box, src=0)  # "send it to everyone"
        epochs = box[0]
    else:
        received = torch.zeros(1, dtype=torch.long)
        dist.broadcast(received, src=0)  # "receive it from rank 0" -- a different call
        epochs = int(received.item())
    return epochs


if __name__ == "__main__":
    torchrun_main(scenario)
