"""Creating a gloo process group is a rendezvous: no rank returns before the last one has arrived."""

import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(step=0.15):
    rank = dist.get_rank()
    with span("start-up"):
        time.sleep(step * rank)  # the ranks get here at different times
    group = dist.new_group(backend="gloo")  # builds a ProcessGroupGloo, exactly as init_process_group does
    return group.size()


if __name__ == "__main__":
    torchrun_main(scenario)
