"""monitored_barrier with two ranks missing: rank 0 names the first one, or all with wait_all_ranks=True."""

from datetime import timedelta

import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(missing=(2, 3), wait_all_ranks=False, seconds=0.5):
    if dist.get_rank() in missing:
        return "skipped the barrier"
    dist.monitored_barrier(timeout=timedelta(seconds=seconds), wait_all_ranks=wait_all_ranks)
    return "passed"


if __name__ == "__main__":
    torchrun_main(scenario)
